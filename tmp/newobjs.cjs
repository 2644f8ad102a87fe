// node newobjs.cjs A B sessions: objects new in B (by id), grouped by kind <- retainer kind.edge
const fs=require('fs');
function load(f){const s=JSON.parse(fs.readFileSync(f));return s;}
const A=load(process.argv[2]);const m=A.snapshot.meta;const nf=m.node_fields.length;
const idsA=new Set();for(let i=0;i<A.nodes.length;i+=nf)idsA.add(A.nodes[i+2]);
const s=load(process.argv[3]);const per=+process.argv[4]||1;
const ef=s.snapshot.meta.edge_fields.length;const nt=s.snapshot.meta.node_types[0], et=s.snapshot.meta.edge_types[0];
const N=s.nodes.length/nf;const name=i=>s.strings[s.nodes[i*nf+1]];const type=i=>nt[s.nodes[i*nf]];
const kind=i=>{const t=type(i);return t==='object'||t==='native'?name(i):t==='closure'?`(closure)${name(i)}`:`(${t})`;};
const isNew=new Uint8Array(N);for(let i=0;i<N;i++)if(!idsA.has(s.nodes[i*nf+2]))isNew[i]=1;
const owner=new Int32Array(N).fill(-1);const ownerEdge=new Int32Array(N).fill(-1);
let e=0;for(let i=0;i<N;i++){const c=s.nodes[i*nf+4];for(let k=0;k<c;k++,e++){const to=s.edges[e*ef+2]/nf;const ty=et[s.edges[e*ef]];if(ty==='weak'||ty==='shortcut')continue;if(owner[to]===-1&&isNew[to]){owner[to]=i;ownerEdge[to]=e;}}}
const edgeName=e=>{const ty=et[s.edges[e*ef]];const v=s.edges[e*ef+1];return (ty==='element'||ty==='hidden')?`[]`:s.strings[v];};
const g=new Map();
for(let i=0;i<N;i++){if(!isNew[i])continue;const o=owner[i];const key=`${kind(i)} <- ${o>=0?kind(o)+'.'+edgeName(ownerEdge[i]):'?'}`;const v=g.get(key)||{c:0,b:0};v.c++;v.b+=s.nodes[i*nf+3];g.set(key,v);}
const rows=[...g].sort((a,b)=>b[1].b-a[1].b).slice(0,+process.argv[5]||60);
for(const [k,v] of rows)console.log(String((v.b/per).toFixed(0)).padStart(6),(v.c/per).toFixed(2).padStart(6),k.slice(0,120));
