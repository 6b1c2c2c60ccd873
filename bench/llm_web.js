// `pte-webgpu bench --llm --backend browser`: the same decoder as ONNX (make llm-onnx) run
// by ONNX Runtime Web's WebGPU backend directly and through transformers.js, in the same
// Chromium as ours. Served by bench/llm_bench.py:
//   /ort/   onnxruntime-web/dist          (build/ortweb)
//   /tjs/   @huggingface/transformers/dist, /tjsort/ its onnxruntime-web/dist (build/transformersjs)
//   /models/NAME/{config.json, generation_config.json, onnx/model.onnx}
// spec: {model, nLayers, kvHeads, headDim, vocab, warmup, plan: [{context, prefill, steps, cache}]}
// Both return one record per (phase, context): {phase, context, tokens|positions, ms[]};
// decode records also `greedy` (the token fed to the first step, then each step's pick),
// `cache` and, where known, `present` (the dims of layer 0's key cache after the last step). cache
// "prefill": the decode follows a real prefill of `prefill` tokens; "seeded" (a prompt too
// long for these peers on SwiftShader): no prefill, the first step starts from a KV cache of
// `prefill` rows of zeros on the GPU, made once per context. A step's time depends on the
// cache's length, not its values, so the decode positions are ours; the picks are not.

import { kernelTimes, loadOrt } from "./ort_common.js";

const now = () => performance.now();
// progress lines the host prints (bench/llm_browser.py listens to the console)
const say = (text) => console.info(`llm-bench: ${text}`);
const range = (a, b) => Array.from({ length: b - a }, (_, i) => a + i);
const median = (a) => { const s = [...a].sort((p, q) => p - q); const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
// prompt ids: the same formula as ours (bench/llm_bench.py prompt_ids)
const promptIds = (n, vocab) => range(0, n).map((i) => (7 * i + 3) % Math.min(1000, vocab - 1) + 1);

// n rows of zeros per past_key_values input in GPU buffers (WebGPU zero-fills new ones) on
// `device`; tensors() wraps them as GPU tensors of `Tensor` (ort's class), without a
// disposer: a tensor disposed by its user leaves the buffer, destroyed once done
function zeroCache(Tensor, device, names, spec, n) {
  const dims = [1, spec.kvHeads, n, spec.headDim];
  const size = 4 * dims.reduce((a, b) => a * b);
  const buffers = names.map(() => device.createBuffer({ size,
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST }));
  return { buffers, tensors: () => buffers.map((b) => Tensor.fromGpuBuffer(b, { dataType: "float32", dims })) };
}

// the token fed to a seeded cache's first step: the prompt's next id
const seedToken = (n, vocab) => promptIds(n + 1, vocab)[n];

// p.steps greedy decode steps after `r` (the prefill's result, or a seeded cache's), each
// timed: next(r, position) runs one and gives its result ({token, ...}).
// The warm-up `warm()` repeated for spec.rampMs (as ours: llm/bench_job.py RAMP_MS): a GPU
// left idle while the model loaded runs its first steps at a fraction of its clock.
const RAMP_MS = 1000;
async function rampUp(spec, warm) {
  const end = now() + (spec.rampMs ?? RAMP_MS);
  do await warm(); while (now() < end);
}

async function timedDecode(p, r, next) {
  const ms = [], greedy = [r.token];
  for (let k = 0; k < p.steps; k++) {
    const t0 = now();
    r = await next(r, p.prefill + k);
    ms.push(now() - t0);
    greedy.push(r.token);
  }
  return { ms, greedy, r };
}

function argmax(data, offset, n) {
  let best = offset;
  for (let i = offset + 1; i < offset + n; i++) if (data[i] > data[best]) best = i;
  return best - offset;
}

// ONNX Runtime Web, JSEP build (ort.mjs: the faster of its two WebGPU builds on SwiftShader,
// docs/performance.md rms_norm); present.* stay on the GPU and go back in as past_*.
export async function benchOrtLlm(spec) {
  const ort = await loadOrt("ort.mjs");
  const layers = range(0, spec.nLayers);
  const pastNames = layers.flatMap((i) => [`past_key_values.${i}.key`, `past_key_values.${i}.value`]);
  const presentNames = layers.flatMap((i) => [`present.${i}.key`, `present.${i}.value`]);
  let t0 = now();
  const session = await ort.InferenceSession.create(`/models/${spec.model}/onnx/model.onnx`, {
    executionProviders: ["webgpu"], graphOptimizationLevel: "all",
    preferredOutputLocation: Object.fromEntries(presentNames.map((n) => [n, "gpu-buffer"])) });
  const loadMs = now() - t0;
  const int64 = (values) => new ort.Tensor("int64", BigInt64Array.from(values, BigInt), [1, values.length]);
  const empty = () => pastNames.map(() => new ort.Tensor("float32", new Float32Array(0),
    [1, spec.kvHeads, 0, spec.headDim]));
  // one run: ids after `start` cached tokens; returns the greedy token and the new cache
  const step = async (ids, start, past) => {
    const feeds = { input_ids: int64(ids), attention_mask: int64(range(0, start + ids.length).map(() => 1)),
      position_ids: int64(range(start, start + ids.length)) };
    pastNames.forEach((n, i) => { feeds[n] = past[i]; });
    const out = await session.run(feeds);
    const logits = out.logits.data;  // [1, 1, vocab] on the CPU: 4 x vocab bytes back
    const token = argmax(logits, logits.length - spec.vocab, spec.vocab);
    for (const t of past) if (t.location === "gpu-buffer") t.dispose();
    return { token, past: presentNames.map((n) => out[n]) };
  };
  const records = [], profiles = {};
  // warm-up as ours (llm/bench_job.py): a prefill of up to 16 tokens and a decode step,
  // and with spec.warmup an untimed prefill of each length before its timed one
  const warm = async (n, decode) => {
    let w = await step(promptIds(n, spec.vocab), 0, empty());
    if (decode) w = await step([w.token], n, w.past);
    for (const t of w.past) t.dispose();
  };
  await rampUp(spec, () => warm(Math.min(16, spec.plan[0].prefill), true));
  for (const p of spec.plan) {
    let r, seed = null;
    if (p.cache === "seeded") {
      seed = zeroCache(ort.Tensor, await ort.env.webgpu.device, pastNames, spec, p.prefill);
      // the untimed run of a new length as a prefill's warm-up: one step from the seed
      if (spec.warmup) for (const t of (await step([1], p.prefill, seed.tensors())).past) t.dispose();
      say(`context ${p.context}: ${p.steps} decode steps from a zero KV cache of ${p.prefill} rows`);
      r = { token: seedToken(p.prefill, spec.vocab), past: seed.tensors() };
    } else {
      if (spec.warmup) await warm(p.prefill, false);
      say(`context ${p.context}: prefill of ${p.prefill} tokens`);
      t0 = now();
      r = await step(promptIds(p.prefill, spec.vocab), 0, empty());
      records.push({ phase: "prefill", context: p.context, tokens: p.prefill, ms: [now() - t0] });
      say(`context ${p.context}: ${(p.prefill / records.at(-1).ms[0] * 1e3).toPrecision(3)} tok/s prefill; ${p.steps} decode steps`);
    }
    let ms, greedy;
    ({ ms, greedy, r } = await timedDecode(p, r, (last, pos) => step([last.token], pos, last.past)));
    if (seed) seed.buffers.forEach((b) => b.destroy());
    records.push({ phase: "decode", context: p.context, positions: [p.prefill, p.prefill + p.steps - 1], ms,
      greedy, cache: seed ? "seeded" : "prefill", present: [...r.past[0].dims] });
    if (spec.profile) {  // a profiler failure must not lose the timings
      profiles[p.context] = await profileStep(ort, () => step([r.token], p.prefill + p.steps, r.past))
        .catch((e) => `profile failed: ${e}`);
    }
    else for (const t of r.past) t.dispose();
  }
  await session.release();
  return { records, load_ms: loadMs, version: ort.env.versions?.web ?? "?", build: "jsep", profiles };
}

// Per-kernel GPU time of one more decode step (ort_common.js kernelTimes; null without
// timestamp-query). `run` is that step (it takes the cache; its own outputs are dropped here).
const profileStep = (ort, run) => kernelTimes(ort, async () => {
  const out = await run();
  for (const t of out.past) t.dispose();
});

// transformers.js: AutoModelForCausalLM on device "webgpu" from local files only; one greedy
// generate() per context (prompt of `prefill` ids, steps + 1 new tokens: the prefill's token,
// then `steps` decode forwards), timed by a streamer: its put() runs after each token.
// spec.tjs (optional, the builder's graphs: bench/llm_browser.py tjs_genai): {dtype ("fp32" |
// "q4": the file onnx/model[_q4].onnx), externalData ([{path, data}]: `path` the graph's own
// location string, "model.onnx.data", `data` a URL under the model's folder that
// transformers.js fetches and hands to ORT as session_options.externalData)}. Its presents
// stay on the GPU (transformers.js's preferredOutputLocation for present.*) and go back in as
// the next past_key_values.*, one row longer (GQA without a shared buffer).
export async function benchTjsLlm(spec) {
  const tjs = await import("/tjs/transformers.min.js");
  tjs.env.allowRemoteModels = false;
  tjs.env.allowLocalModels = true;
  tjs.env.localModelPath = "/models/";
  tjs.env.useBrowserCache = false;  // 650 MB: over a headless profile's Cache API quota
  tjs.env.backends.onnx.wasm.wasmPaths = "/tjsort/";
  tjs.env.backends.onnx.wasm.numThreads = 1;
  let t0 = now();
  const t = spec.tjs ?? {};
  const model = await tjs.AutoModelForCausalLM.from_pretrained(spec.model, { device: "webgpu",
    dtype: t.dtype ?? "fp32", ...(t.externalData && { session_options: { externalData: t.externalData } }) });
  const loadMs = now() - t0;
  // a greedy generate() of newTokens after a prompt of n ids; with `seed` (zeroCache: GPU
  // tensors of n rows) the prompt is n + 1 ids and a DynamicCache of the seed holds the
  // first n, so generate() feeds only the last one (its documented way to continue from a
  // cache): every forward is then a decode step. seed "empty": an empty DynamicCache, or with
  // spec.tjs.emptyCache one of [1, kv, 0, hd] CPU tensors, also when no seed is given: the
  // builder's graphs name past_key_values.*'s last dim symbolically ("kv_cache_dim"), and
  // transformers.js's own empty cache (addPastKeyValues: the input's metadata, a symbol
  // other than batch_size as 0) would be [1, kv, 0, 0], which GroupQueryAttention refuses
  // ("dimension 3 should match the packed KV head dimension"); this is the cache it makes
  // where that dim is a number
  const generate = async (n, newTokens, seed = t.emptyCache ? "empty" : null) => {
    const stamps = [], greedy = [];
    const streamer = { put: (ids) => { stamps.push(now()); greedy.push(Number(ids[0].at(-1))); },
      end: () => {} };
    const len = seed?.buffers ? n + 1 : n;
    const ids = new tjs.Tensor("int64", BigInt64Array.from(promptIds(len, spec.vocab), BigInt), [1, len]);
    const mask = new tjs.Tensor("int64", new BigInt64Array(len).fill(1n), [1, len]);
    const cache = seed === "empty" ? new tjs.DynamicCache(t.emptyCache ? Object.fromEntries(pastNames.map((name) =>
      [name, new tjs.Tensor("float32", new Float32Array(0), [1, spec.kvHeads, 0, spec.headDim])])) : undefined)
      : seed && new tjs.DynamicCache(Object.fromEntries(seed.tensors().map((x, i) => [pastNames[i], new tjs.Tensor(x)])));
    t0 = now();
    await model.generate({ input_ids: ids, attention_mask: mask, max_new_tokens: newTokens,
      min_new_tokens: newTokens, do_sample: false, streamer, ...(cache && { past_key_values: cache }) });
    // a cache passed in is kept alive by generate(): its dims, then its GPU tensors freed
    const present = cache && [...cache[pastNames[0]].dims];
    const location = cache?.[pastNames[0]].location;  // "gpu-buffer": the presents stayed there
    // the class of ort's tensors that transformers.js takes as such: its session's outputs'
    // (transformers.js bundles onnxruntime-common twice; a tensor of the other class would
    // be wrapped again, and its dispose would call itself)
    const ortTensor = cache && cache[pastNames[0]].ort_tensor.constructor;
    if (cache) await cache.dispose();
    return { stamps, greedy, present, location, ortTensor };  // stamps: the prompt's put, then one after each forward
  };
  const pastNames = range(0, spec.nLayers).flatMap((i) => [`past_key_values.${i}.key`, `past_key_values.${i}.value`]);
  const records = [];
  // warm-up, as ours; an empty cache passed in (the same as none) hands back ort's class
  let ortTensor;
  await rampUp(spec, async () => {
    ({ ortTensor } = await generate(Math.min(16, spec.plan[0].prefill), 2, "empty"));
  });
  for (const p of spec.plan) {
    if (p.cache === "seeded") {
      const seed = zeroCache(ortTensor, await tjs.env.backends.onnx.webgpu.device, pastNames, spec, p.prefill);
      if (spec.warmup) await generate(p.prefill, 1, seed);
      say(`context ${p.context}: generate() of ${p.steps} decode steps from a zero KV cache of ${p.prefill} rows`);
      const { stamps: s, greedy, present, location } = await generate(p.prefill, p.steps, seed);
      seed.buffers.forEach((b) => b.destroy());
      records.push({ phase: "decode", context: p.context, positions: [p.prefill, p.prefill + p.steps - 1],
        ms: range(1, s.length).map((i) => s[i] - s[i - 1]), greedy, cache: "seeded", present,
        kvLocation: location });
      continue;
    }
    if (spec.warmup) await generate(p.prefill, 1);
    say(`context ${p.context}: generate() after a prompt of ${p.prefill} tokens`);
    const { stamps: s, greedy, present, location } = await generate(p.prefill, p.steps + 1);
    records.push({ phase: "prefill", context: p.context, tokens: p.prefill, ms: [s[1] - s[0]] });
    records.push({ phase: "decode", context: p.context, positions: [p.prefill, p.prefill + p.steps - 1],
      ms: range(2, s.length).map((i) => s[i] - s[i - 1]), greedy: greedy.slice(1), cache: "prefill",
      ...(present && { present, kvLocation: location }) });
  }
  await model.dispose();
  // its ORT's asyncify build (ort-wasm-simd-threaded.asyncify.*): the WebGPU EP, not JSEP
  return { records, load_ms: loadMs, version: tjs.env.version ?? "?", build: "webgpu-ep" };
}

// ONNX Runtime Web's WebGPU EP (ort.webgpu.mjs) on the graph of ORT's own LLM exporter
// (onnxruntime-genai's builder, make llm-onnx-genai: GroupQueryAttention, MatMulNBits,
// SkipSimplifiedLayerNormalization). spec.genai (from its genai_config.json, bench/llm_browser.py):
// {file, pastKey, pastValue, presentKey, presentValue ("past_key_values.%d.key" ..),
// positionIds, mode, maxLength, keepLogits}. Modes, each with IO binding (GPU tensors in and out):
// "grow": present.* come back as GPU buffers [1, kv, past + n, hd] and go in as the next
// past_key_values.*; "shared": one [1, kv, maxLength, hd] GPU buffer per cache, fed as past
// and bound as present (GQA's past_present_share_buffer: it writes the new rows in place);
// "graph": "shared" with every input and output a fixed-shape GPU tensor (attention_mask
// [1, maxLength], ones then zeros; logits a bound buffer) and ORT's graph capture on (a graph
// built with enable_webgpu_graph). Seeded contexts start from a zero cache of `prefill` rows.
export async function benchGenaiLlm(spec) {
  const g = spec.genai;
  const ort = await loadOrt("ort.webgpu.mjs");
  const layers = range(0, spec.nLayers);
  const names = (a, b) => layers.flatMap((i) => [a.replace("%d", i), b.replace("%d", i)]);
  const pastNames = names(g.pastKey, g.pastValue), presentNames = names(g.presentKey, g.presentValue);
  const graph = g.mode === "graph", shared = g.mode !== "grow";
  const base = `/models/${spec.model}/`;
  let t0 = now();
  const options = { executionProviders: [{ name: "webgpu", validationMode: "disabled" }],
    graphOptimizationLevel: "all", enableGraphCapture: graph,
    externalData: g.external ? [{ path: g.external, data: base + g.external }] : undefined,
    preferredOutputLocation: graph ? "gpu-buffer"
      : Object.fromEntries(presentNames.map((n) => [n, "gpu-buffer"])) };
  const session = await ort.InferenceSession.create(base + g.file, options);
  const loadMs = now() - t0;
  const device = await ort.env.webgpu.device;
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const kvDims = (n) => [1, spec.kvHeads, n, spec.headDim];
  const gpu = (type, dims, bytes) => {
    const buffer = device.createBuffer({ size: Math.max(16, dims.reduce((a, b) => a * b) * bytes), usage });
    return { buffer, tensor: ort.Tensor.fromGpuBuffer(buffer, { dataType: type, dims }) };
  };
  const int64 = (values) => new ort.Tensor("int64", BigInt64Array.from(values, BigInt), [1, values.length]);
  // shared / graph: the caches (one buffer each), and for graph the fixed-shape inputs
  const maxLen = g.maxLength;
  const fixed = graph && { ids: gpu("int64", [1, 1], 8), mask: gpu("int64", [1, maxLen], 8),
    pos: gpu("int64", [1, 1], 8), logits: gpu("float32", [1, 1, spec.vocab], 4),
    read: device.createBuffer({ size: 4 * spec.vocab,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }) };
  const allocCache = (n) => shared ? pastNames.map(() => gpu("float32", kvDims(maxLen), 4))
    : pastNames.map(() => (n ? gpu("float32", kvDims(n), 4)
      : { tensor: new ort.Tensor("float32", new Float32Array(0), kvDims(0)) }));
  // graph: the buffers bound at capture are replayed, so one cache for the session, zeroed
  const graphCache = graph && allocCache(0);
  const newCache = (n) => {
    if (!graph) return allocCache(n);
    const enc = device.createCommandEncoder();
    for (const c of graphCache) enc.clearBuffer(c.buffer);
    device.queue.submit([enc.finish()]);
    return graphCache;
  };
  const freeCache = (c) => { if (c !== graphCache) c.forEach((b) => b.buffer?.destroy()); };
  const logitsRows = [];
  // one run: ids after `start` cached rows in `cache`; returns the greedy token and the cache
  const step = async (ids, start, cache) => {
    const total = start + ids.length;
    const feeds = {}, fetches = {};
    if (graph) {
      if (ids.length !== 1) throw new Error("graph capture runs one token a step");
      device.queue.writeBuffer(fixed.ids.buffer, 0, BigInt64Array.from(ids, BigInt));
      const mask = BigInt64Array.from(range(0, maxLen), (i) => BigInt(i < total));
      device.queue.writeBuffer(fixed.mask.buffer, 0, mask);
      device.queue.writeBuffer(fixed.pos.buffer, 0, BigInt64Array.from([BigInt(start)]));
      feeds.input_ids = fixed.ids.tensor;
      feeds.attention_mask = fixed.mask.tensor;
      if (g.positionIds) feeds.position_ids = fixed.pos.tensor;
      fetches.logits = fixed.logits.tensor;
    } else {
      feeds.input_ids = int64(ids);
      feeds.attention_mask = int64(range(0, total).map(() => 1));
      if (g.positionIds) feeds.position_ids = int64(range(start, total));
      fetches.logits = null;  // run() returns only what fetches names: ORT allocates this one
    }
    pastNames.forEach((n, i) => { feeds[n] = cache[i].tensor; });
    if (shared) presentNames.forEach((n, i) => { fetches[n] = cache[i].tensor; });
    const out = await session.run(feeds, shared ? fetches : undefined);
    let logits;
    if (graph) {
      const enc = device.createCommandEncoder();
      enc.copyBufferToBuffer(fixed.logits.buffer, 0, fixed.read, 0, 4 * spec.vocab);
      device.queue.submit([enc.finish()]);
      await fixed.read.mapAsync(GPUMapMode.READ);
      logits = new Float32Array(fixed.read.getMappedRange().slice(0));
      fixed.read.unmap();
    } else {
      logits = out.logits.data;  // the last position's row on the CPU
    }
    const row = logits.length - spec.vocab;
    if (spec.keepLogits) logitsRows.push(Array.from(logits.subarray(row)));
    const token = argmax(logits, row, spec.vocab);
    if (shared) return { token, cache };
    freeCache(cache);
    // grow: the presents (GPU tensors ORT allocated) become the next past
    return { token, cache: presentNames.map((n) => ({ tensor: out[n],
      buffer: { destroy: () => out[n].dispose() } })) };
  };
  const records = [], profiles = {};
  // warm-up as benchOrtLlm: a prefill of up to 16 tokens (graph: token by token) and a decode step
  const prefill = async (ids, cache) => {
    if (!graph) return step(ids, 0, cache);
    let r;
    for (let i = 0; i < ids.length; i++) r = await step([ids[i]], i, cache);
    return r;
  };
  const warm = async (n, decode) => {
    const cache = newCache(0);
    let w = await prefill(promptIds(n, spec.vocab), cache);
    if (decode) w = await step([w.token], n, w.cache);
    freeCache(w.cache);
  };
  await rampUp(spec, () => warm(Math.min(16, spec.plan[0].prefill), true));
  logitsRows.length = 0;
  for (const p of spec.plan) {
    let r;
    if (p.cache === "seeded") {
      if (spec.warmup) freeCache((await step([1], p.prefill, newCache(p.prefill))).cache);
      say(`context ${p.context}: ${p.steps} decode steps from a zero KV cache of ${p.prefill} rows`);
      r = { token: seedToken(p.prefill, spec.vocab), cache: newCache(p.prefill) };
      logitsRows.length = 0;
    } else {
      if (spec.warmup) await warm(p.prefill, false);
      logitsRows.length = 0;
      say(`context ${p.context}: prefill of ${p.prefill} tokens${graph ? " (one token a run)" : ""}`);
      t0 = now();
      r = await prefill(promptIds(p.prefill, spec.vocab), newCache(0));
      records.push({ phase: "prefill", context: p.context, tokens: p.prefill, ms: [now() - t0] });
      const rate = (p.prefill / records.at(-1).ms[0] * 1e3).toPrecision(3);
      say(`context ${p.context}: ${rate} tok/s prefill; ${p.steps} decode steps`);
    }
    let ms, greedy;
    ({ ms, greedy, r } = await timedDecode(p, r, (last, pos) => step([last.token], pos, last.cache)));
    const rec = { phase: "decode", context: p.context, positions: [p.prefill, p.prefill + p.steps - 1], ms,
      greedy, cache: p.cache, present: [...r.cache[0].tensor.dims] };
    if (spec.keepLogits) rec.logits = logitsRows.splice(0);
    records.push(rec);
    if (spec.profile) {
      profiles[p.context] = await kernelTimes(ort, async () => {
        r = await step([r.token], p.prefill + p.steps, r.cache);
      }).catch((e) => `profile failed: ${e}`);
    }
    freeCache(r.cache);
  }
  await session.release();
  if (fixed) for (const b of [...Object.values(fixed), ...graphCache]) (b.buffer ?? b).destroy();
  return { records, load_ms: loadMs, version: ort.env.versions?.web ?? "?", build: "webgpu-ep", profiles };
}

window.benchOrtLlm = benchOrtLlm;
window.benchGenaiLlm = benchGenaiLlm;
window.benchTjsLlm = benchTjsLlm;
window.llmMedian = median;
