// Turns the dicts returned by pte_webgpu.app.webapp into DOM. Text only (textContent),
// never HTML, so names from an uploaded file cannot inject markup.

/** el("td", {class: "x", "data-testid": "y"}, "text", child, ...) */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== undefined && value !== null) node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

const tensorText = (t) => `${t.dtype}[${t.shape.join(", ")}]`;
const num = (x, digits = 4) =>
  x === undefined || x === null ? "—" : x === 0 ? "0" : Number.isFinite(x) ? x.toPrecision(digits) : String(x);
const ms = (x) => `${x.toFixed(x < 10 ? 2 : 1)} ms`;
const values = (list) => list.map((v) => num(v, 5)).join(", ") + (list.length ? ", …" : "");

function table(testid, head, rows) {
  // The wrapper scrolls sideways: long shapes or keys never widen the page.
  return el("div", { class: "table-wrap" }, el("table", { "data-testid": testid },
    el("thead", {}, el("tr", {}, head.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows)));
}

/** The graph summary of webapp.describe_file. */
export function renderGraph(summary) {
  const out = [el("p", { class: "muted" },
    `${summary.file.name} · ${summary.file.size} bytes`,
    summary.data_files.length ? ` · data files: ${summary.data_files.map((f) => f.name).join(", ")}` : "")];
  for (const method of summary.methods) {
    out.push(el("h3", {}, `method ${method.name}`),
      el("p", { "data-testid": "method-io" },
        `inputs: ${method.inputs.map(tensorText).join(", ") || "none"} → outputs: ${method.outputs.map(tensorText).join(", ")}`));
    if (method.problems.length) {
      out.push(el("div", { class: "warning", "data-testid": "problems" },
        el("strong", {}, "This runtime cannot run this method:"),
        el("ul", {}, method.problems.map((p) => el("li", {}, p)))));
    }
    for (const step of method.steps) out.push(renderStep(step));
  }
  return out;
}

function renderStep(step) {
  if (step.kind === "kernel") {
    return el("p", { class: step.supported ? "" : "unsupported", "data-testid": "kernel-step" },
      `instruction ${step.index}: non-delegated kernel ${step.op} — ${step.supported ? "✓ WebGPU" : "✗ unsupported"}`);
  }
  if (step.kind !== "delegate") return el("p", { class: "muted" }, `instruction ${step.index}: ${step.op}`);
  const ops = step.ops.map((op) =>
    el("tr", { "data-testid": "op-row", class: op.supported ? "" : "unsupported" },
      el("td", {}, op.index), el("td", {}, el("code", {}, op.name)),
      el("td", {}, el("code", {}, op.args.join("\n"))),
      el("td", {}, op.supported ? "✓ WebGPU" : "✗ unsupported")));
  const parts = [el("h4", {}, `instruction ${step.index}: delegate ${step.delegate} (${step.backend})`)];
  if (step.dataflow) parts.push(renderDataflow(step.dataflow, `delegate ${step.delegate} · ${step.backend}`));
  parts.push(table("ops-table", ["#", "op", "arguments (value id, type, shape)", "status"], ops));
  if (step.constants.length) {
    const rows = step.constants.map((c) =>
      el("tr", { "data-testid": "constant-row", class: c.error ? "unsupported" : "" },
        el("td", {}, c.index), el("td", {}, c.shape ? tensorText(c) : "—"), el("td", {}, c.bytes),
        el("td", {}, el("code", {}, c.stored)),
        el("td", {}, c.error ? `✗ ${c.error}` : c.resolves_to),
        el("td", {}, el("code", {}, values(c.first_values)))));
    parts.push(table("constants-table", ["const", "tensor", "bytes", "stored as", "resolves to", "first values"], rows));
  }
  return el("div", { class: "step" }, parts);
}

// --- the dataflow drawing --------------------------------------------------------------
const SVG_NS = "http://www.w3.org/2000/svg";
/** Like el(), in the SVG namespace. */
function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== undefined && value !== null) node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child !== undefined && child !== null) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}
const NODE_W = 150, NODE_H = 30, GAP_X = 24, GAP_Y = 34, PAD = 16, LABEL_CHARS = 20;

/** webapp.dataflow as SVG: a box per op (and per graph input and output), an arrow per
 *  tensor from the op that writes it to each op that reads it, the delegate as a frame. */
function renderDataflow(flow, title) {
  const rows = [];
  for (const node of flow.nodes) (rows[node.layer] ??= []).push(node);
  const widest = Math.max(...rows.map((r) => (r ?? []).length), 1);
  const width = 2 * PAD + widest * NODE_W + (widest - 1) * GAP_X;
  const at = new Map();
  rows.forEach((row = [], layer) => {
    const rowWidth = row.length * NODE_W + (row.length - 1) * GAP_X;
    row.forEach((node, i) => at.set(node.id, {
      x: (width - rowWidth) / 2 + i * (NODE_W + GAP_X), y: PAD + 18 + layer * (NODE_H + GAP_Y) }));
  });
  const height = PAD + 18 + rows.length * (NODE_H + GAP_Y) - GAP_Y + PAD;
  const ops = flow.nodes.filter((n) => n.kind === "op").map((n) => at.get(n.id));
  const frame = ops.length ? {
    x: Math.min(...ops.map((p) => p.x)) - 10, y: Math.min(...ops.map((p) => p.y)) - 12,
    x2: Math.max(...ops.map((p) => p.x)) + NODE_W + 10, y2: Math.max(...ops.map((p) => p.y)) + NODE_H + 10,
  } : null;
  const edges = flow.edges.map((e) => {
    const a = at.get(e.from), b = at.get(e.to);
    const x1 = a.x + NODE_W / 2, y1 = a.y + NODE_H, x2 = b.x + NODE_W / 2, y2 = b.y;
    const bend = Math.max(12, (y2 - y1) / 2);
    return svg("path", { class: "edge", "data-testid": "graph-edge", "data-value": e.value,
      "data-from": e.from, "data-to": e.to, "marker-end": "url(#arrow)",
      d: `M${x1},${y1} C${x1},${y1 + bend} ${x2},${y2 - bend} ${x2},${y2}` },
    svg("title", {}, `%${e.value} ${e.text}`));
  });
  const nodes = flow.nodes.map((n) => {
    const { x, y } = at.get(n.id);
    const label = n.label.length > LABEL_CHARS ? n.label.slice(0, LABEL_CHARS - 1) + "…" : n.label;
    const extra = n.constants ? ` +${n.constants} const` : "";
    return svg("g", { class: `node ${n.kind}${n.supported === false ? " unsupported" : ""}`,
      "data-testid": "graph-node", "data-kind": n.kind, "data-op": n.op },
    svg("title", {}, n.op ? `${n.op}${extra}` : n.label),
    svg("rect", { x, y, width: NODE_W, height: NODE_H, rx: 6 }),
    svg("text", { x: x + NODE_W / 2, y: y + NODE_H / 2 + 4, "text-anchor": "middle" }, label + extra));
  });
  return el("div", { class: "table-wrap dataflow" }, svg("svg", {
    "data-testid": "graph-svg", width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": `${title}: ${flow.nodes.length} nodes, ${flow.edges.length} edges` },
  svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5,
    markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, svg("path", { d: "M0,0 L10,5 L0,10 z" }))),
  frame && svg("g", { "data-testid": "graph-delegate" },
    svg("rect", { class: "frame", x: frame.x, y: frame.y, width: frame.x2 - frame.x, height: frame.y2 - frame.y, rx: 10 }),
    svg("text", { class: "frame-label", x: frame.x + 8, y: frame.y - 4 }, title)),
  edges, nodes));
}

/** The run report of webapp.run; an image model's outputs also by their shape, with the
 *  class `labels` (or null) and the `picture` run ({source, box} of app.js, or null). */
export function renderResult(r, { labels = null, picture = null } = {}) {
  const noReference = r.max_abs_error == null; // Python None arrives as undefined
  const ok = !noReference && r.max_abs_error < 1e-4;
  const card = (label, value, testid, cls = "", dataValue = undefined) =>
    el("div", { class: `card ${cls}` }, el("div", { class: "label" }, label),
      el("div", { class: "value", "data-testid": testid, "data-value": dataValue }, value));
  const cards = [
    card("max abs error vs CPU reference", noReference ? "n/a" : num(r.max_abs_error, 3),
      "max-abs-error", noReference ? "" : ok ? "good" : "bad", r.max_abs_error ?? ""),
    card("max rel error (of output scale)", num(r.max_rel_error, 3), "max-rel-error"),
    card("execute (first)", ms(r.execute_ms.first), "execute-first"),
    card(`execute (median of ${r.execute_ms.runs})`, ms(r.execute_ms.median), "execute-median"),
    card("load (parse + build)", ms(r.load_ms), "load-time"),
  ];
  if (r.expected_max_abs_error != null) {
    cards.splice(1, 0, card("max abs error vs .npz outputs", num(r.expected_max_abs_error, 3), "expected-error"));
  }
  const rows = r.outputs.map((o) =>
    el("tr", { "data-testid": "output-row" }, el("td", {}, o.index), el("td", {}, tensorText(o)),
      el("td", {}, el("code", {}, values(o.first_values))), el("td", {}, num(o.max_abs_error, 3))));
  return [
    el("div", { class: "cards" }, cards),
    r.reference_error ? el("p", { class: "warning" }, `No CPU reference: ${r.reference_error}`) : null,
    table("outputs-table", ["output", "tensor", "first values", "max abs error"], rows),
    ...r.outputs.filter((o) => o.view).map((o) => renderView(o, labels, picture)),
    el("p", { class: "muted" },
      `inputs: ${r.input_source} (${r.inputs.map((i) => `${i.name} ${tensorText(i)}`).join(", ")}) · adapter: ${r.adapter}`),
    r.profile ? renderProfile(r.profile, r.timestamps) : null,
  ].filter(Boolean);
}

// --- an image model's outputs ------------------------------------------------------------
// Distinct colours for class indices (Sasha Trubetskoy's 20), repeating past 20.
const PALETTE = ["#e6194b", "#3cb44b", "#ffe119", "#4363d8", "#f58231", "#911eb4", "#46f0f0",
  "#f032e6", "#bcf60c", "#fabebe", "#008080", "#e6beff", "#9a6324", "#fffac8", "#800000",
  "#aaffc3", "#808000", "#ffd8b1", "#000075", "#808080"];
/** [r, g, b] of class `k` in the mask. */
export const classColour = (k) => [1, 3, 5].map((i) => parseInt(PALETTE[k % PALETTE.length].slice(i, i + 2), 16));

/** The crop of a picture the model sees, drawn on `canvas` (at most `largest` pixels wide or high). */
export function drawCrop(canvas, picture, box, largest = 512) {
  const scale = Math.min(1, largest / Math.max(box.width, box.height));
  canvas.width = Math.max(1, Math.round(box.width * scale));
  canvas.height = Math.max(1, Math.round(box.height * scale));
  canvas.getContext("2d").drawImage(picture.bitmap, box.left, box.top, box.width, box.height,
    0, 0, canvas.width, canvas.height);
}

/** webapp's image_model.output_view: a table of the top classes, or a mask of classes. */
function renderView(output, labels, picture) {
  const { view } = output;
  const label = (k) => labels?.[k] || "—";
  if (view.kind === "classes") {
    const rows = view.top.map((c, rank) =>
      el("tr", { "data-testid": "class-row", "data-index": c.index, "data-probability": c.probability },
        el("td", {}, rank + 1), el("td", {}, c.index), el("td", {}, label(c.index)),
        el("td", {}, el("span", { class: "share", style: `width: ${(6 * c.probability).toFixed(2)}rem` }),
          `${(100 * c.probability).toFixed(2)} %`),
        el("td", {}, num(c.logit, 5))));
    return el("div", { class: "view", "data-testid": "classes-view" },
      el("h3", {}, `output ${output.index}: top ${view.top.length} of ${view.classes} classes`),
      table("top-classes", ["#", "class", "label", "probability (softmax)", "logit"], rows));
  }
  const mask = el("canvas", { "data-testid": "mask-canvas", class: picture ? "mask over" : "mask",
    width: view.width, height: view.height });
  const context = mask.getContext("2d");
  const image = context.createImageData(view.width, view.height);
  view.argmax.forEach((k, p) => image.data.set([...classColour(k), 255], 4 * p));
  context.putImageData(image, 0, 0);
  const frame = el("div", { class: "overlay" });
  if (picture) {
    const photo = el("canvas", { class: "picture", "data-testid": "mask-picture" });
    drawCrop(photo, picture.source, picture.box);
    frame.append(photo);
  }
  frame.append(mask);
  const pixels = view.width * view.height;
  const present = view.counts.map((n, k) => [k, n]).filter(([, n]) => n).sort((a, b) => b[1] - a[1]);
  const legend = present.map(([k, n]) => el("tr", { "data-testid": "mask-class", "data-index": k, "data-pixels": n },
    el("td", {}, el("span", { class: "swatch", style: `background: rgb(${classColour(k).join(", ")})` })),
    el("td", {}, k), el("td", {}, label(k)), el("td", {}, `${((100 * n) / pixels).toFixed(1)} %`)));
  return el("div", { class: "view", "data-testid": "mask-view" },
    el("h3", {}, `output ${output.index}: class of each pixel (argmax over ${view.classes} classes, ` +
      `${view.width} × ${view.height}${picture ? ", over the picture the model saw" : ""})`),
    el("div", { class: "row mask-row" }, frame,
      table("mask-legend", ["", "class", "label", "pixels"], legend)));
}

/** Where a profiled op runs: its delegate, or the plan's own (non-delegated) kernel. */
const where = (row) => (row.delegate != null ? `delegate ${row.delegate}` : `kernel ${row.kernel ?? ""}`.trim());

/** The per-op rows of method.last_profile as a horizontal bar chart (SVG). */
export function renderProfile(profile, timestamps) {
  const total = profile.reduce((sum, row) => sum + row.us, 0);
  const [labelWidth, barWidth, valueWidth, rowHeight] = [360, 380, 140, 22];
  const width = labelWidth + barWidth + valueWidth;
  const longest = Math.max(...profile.map((row) => row.us), 0) || 1;
  const bars = profile.map((row, i) => {
    const share = total ? row.us / total : 0;
    const y = i * rowHeight;
    const label = `${row.op} · ${where(row)}${row.variant ? ` [${row.variant}]` : ""}`;
    const value = `${row.us.toFixed(1)} µs · ${(100 * share).toFixed(1)}%`;
    return svg("g", { "data-testid": "profile-bar", "data-op": row.op, "data-where": where(row),
      "data-us": row.us, "data-share": share },
    svg("title", {}, `${label}: ${value}, ${row.dispatches} dispatch(es)`),
    svg("text", { x: labelWidth - 8, y: y + 15, "text-anchor": "end", class: "bar-label" }, label),
    svg("rect", { x: labelWidth, y: y + 3, height: rowHeight - 6, rx: 2, class: "bar",
      width: Math.max(row.us > 0 ? 1 : 0, (barWidth * row.us) / longest) }),
    svg("text", { x: labelWidth + barWidth + 8, y: y + 15, class: "bar-value" }, value));
  });
  const clock = timestamps ? "GPU timestamps (timestamp-query)" : "wall time per dispatch (no timestamp-query)";
  return el("div", { class: "profile", "data-testid": "profile" },
    el("h3", {}, "Time per op"),
    el("p", { class: "muted" }, "clock: ", el("strong", { "data-testid": "profile-clock" }, clock),
      ` · one extra execute after the timed runs · total `,
      el("span", { "data-testid": "profile-total", "data-value": total }, `${total.toFixed(1)} µs`),
      " · views and copies record no dispatch and show 0"),
    svg("svg", { "data-testid": "profile-chart", viewBox: `0 0 ${width} ${profile.length * rowHeight}`,
      width, height: profile.length * rowHeight, role: "img", "aria-label": "time per op" }, bars));
}
