import { edgesOf, JOB_TRANSITIONS, STATE_KEEPING_WRITES, type StateOrNone, type Transition } from "./transitions";

const BEGIN = "<!-- BEGIN transitions: generated from packages/core/src/sql/transitions.ts by `npm run docs:states`; edit there -->";
const END = "<!-- END transitions -->";

const node = (s: StateOrNone): string => s ?? "[*]";
const arrow = (t: Transition): string => `${t.from.map(node).join(", ")} → ${t.to.map(node).join(", ")}`;
const file = (path: string): string => `\`${path.replace("packages/core/src/", "")}\``;
const where = (t: Transition): string =>
  [file(t.source), t.statement ? `statement in ${file(t.statement)}` : null, t.routine ? `routine \`${t.routine}\`` : null].filter(Boolean).join(", ");
const cell = (text: string): string => text.replaceAll("|", "\\|");

/**
 * The generated part of docs/state-machine.md: the diagram (one arrow per edge, labelled with the
 * transitions that take it), the table of named transitions and the writes that keep the state.
 */
export const renderTransitionsSection = (): string => {
  const labels = new Map<string, string[]>();
  for (const t of JOB_TRANSITIONS) {
    for (const [from, to] of edgesOf(t)) {
      const key = `${node(from)} --> ${node(to)}`;
      labels.set(key, [...(labels.get(key) ?? []), t.name]);
    }
  }
  return [
    BEGIN,
    "```mermaid",
    "stateDiagram-v2",
    ...[...labels].map(([edge, names]) => `    ${edge}: ${names.join(", ")}`),
    "```",
    "",
    "| transition | from → to | function (file) | what | guard (the `WHERE` of the write) |",
    "|---|---|---|---|---|",
    ...JOB_TRANSITIONS.map(
      (t: Transition) =>
        `| \`${t.name}\` | ${arrow(t)} | ${t.functions.map((f) => `\`${f}\``).join(", ")} (${where(t)}) | ${cell(t.label)} | ${cell(t.guard)} |`,
    ),
    "",
    "Writes to a job row that keep its state (not transitions):",
    "",
    "| write | function (file) | what it changes |",
    "|---|---|---|",
    ...STATE_KEEPING_WRITES.map((w) => `| \`${w.name}\` | ${w.functions.map((f) => `\`${f}\``).join(", ")} (${file(w.source)}) | ${cell(w.changes)} |`),
    END,
  ].join("\n");
};

/** `doc` with its generated section replaced by the current one; throws when the markers are missing. */
export const withTransitionsSection = (doc: string): string => {
  const begin = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`docs/state-machine.md lacks the markers ${BEGIN} … ${END}`);
  return doc.slice(0, begin) + renderTransitionsSection() + doc.slice(end + END.length);
};
