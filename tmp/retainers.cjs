// node retainers.js SNAPSHOT NAME [maxPaths]: retainer chains of instances of NAME up to a root
const fs=require('fs');const s=JSON.parse(fs.readFileSync(process.argv[2]));const want=process.argv[3];const maxPaths=+process.argv[4]||2;
const m=s.snapshot.meta;const nf=m.node_fields.length, ef=m.edge_fields.length;const nt=m.node_types[0], et=m.edge_types[0];
const N=s.nodes.length/nf;const name=i=>s.strings[s.nodes[i*nf+1]];const type=i=>nt[s.nodes[i*nf]];
const firstEdge=new Uint32Array(N+1);for(let i=0,e=0;i<N;i++){firstEdge[i]=e;e+=s.nodes[i*nf+4];}firstEdge[N]=s.edges.length/ef;
const rev=new Map();// to -> [from, edgeIdx]
const revStart=new Uint32Array(N+1);const E=s.edges.length/ef;const cnt=new Uint32Array(N);
for(let i=0;i<N;i++)for(let e=firstEdge[i];e<firstEdge[i+1];e++){const t=s.edges[e*ef+2]/nf;const ty=et[s.edges[e*ef]];if(ty==='weak')continue;cnt[t]++;}
let acc=0;for(let i=0;i<N;i++){revStart[i]=acc;acc+=cnt[i];}revStart[N]=acc;const revFrom=new Uint32Array(acc),revEdge=new Uint32Array(acc);const fill=new Uint32Array(N);
for(let i=0;i<N;i++)for(let e=firstEdge[i];e<firstEdge[i+1];e++){const t=s.edges[e*ef+2]/nf;const ty=et[s.edges[e*ef]];if(ty==='weak')continue;const k=revStart[t]+fill[t]++;revFrom[k]=i;revEdge[k]=e;}
const edgeName=e=>{const ty=et[s.edges[e*ef]];const v=s.edges[e*ef+1];return (ty==='element'||ty==='hidden')?`[${v}]`:s.strings[v];};
const inst=[];for(let i=0;i<N;i++)if(name(i)===want&&(type(i)==='object'||type(i)==='closure'||type(i)==='native'))inst.push(i);
console.log(want,'instances',inst.length);
for(const start of inst.slice(-maxPaths)){ // BFS to root (node 0 is synthetic root)
  const prev=new Map([[start,-1]]);const q=[start];let found=-1;
  while(q.length){const x=q.shift();if(x===0||type(x)==='synthetic'&&name(x).includes('root')){found=x;break;}for(let k=revStart[x];k<revStart[x+1];k++){const f=revFrom[k];if(!prev.has(f)){prev.set(f,k);q.push(f);}}}
  const chain=[];let x=found;while(x!==start&&x!==-1&&x!==undefined){const k=prev.get(x);if(k===undefined)break;/* x reached via? we stored prev[f]=k where k edge from f to child */ x=x;break;}
  // reconstruct: prev maps node f -> rev index k (edge from f to the node that discovered it)
  let node=found;const path=[];while(node!==start){const k=prev.get(node);const child=s.edges[revEdge[k]*ef+2]/nf;path.push(`${type(node)}:${name(node).slice(0,50)} --${edgeName(revEdge[k])}-->`);node=child;}
  path.push(`${type(start)}:${name(start)}`);console.log(path.join('\n  '));console.log('---');
}
