/**
 * A small seeded PRNG (mulberry32) for the fuzz tests, so a failing run can be replayed: each
 * test prints its seed, and `FUZZ_SEED=<n>` (or the variable the test names) replays it.
 */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** The seed from `variable` in the environment, else a fresh one. */
export function fuzzSeed(variable = 'FUZZ_SEED'): number {
  return Number(process.env[variable] ?? Date.now() % 1_000_000);
}
