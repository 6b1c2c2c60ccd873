// Turns the dicts returned by pte_webgpu.webapp into DOM. Text only (textContent),
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
  return el("table", { "data-testid": testid },
    el("thead", {}, el("tr", {}, head.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows));
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
  const parts = [el("h4", {}, `instruction ${step.index}: delegate ${step.delegate} (${step.backend})`),
    table("ops-table", ["#", "op", "arguments (value id, type, shape)", "status"], ops)];
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

/** The run report of webapp.run. */
export function renderResult(r) {
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
    el("p", { class: "muted" },
      `inputs: ${r.input_source} (${r.inputs.map((i) => `${i.name} ${tensorText(i)}`).join(", ")}) · adapter: ${r.adapter}`),
  ].filter(Boolean);
}
