// A small project for the project tests (test/project-host.test.mjs, and in
// a real VS Code realtest/project.test.mjs): a two-phase specification, the
// planner's outline and tasks for it, and the implementer's and reviewer's
// answers, for `apserver fake-model` (as e2e/manager_test.go scripts them).
// S2 is a high-risk task: a human approves it even under full_auto.

// The preamble before the first heading is in no node: a coverage gap.
export const SPEC = `A greeting tool, specified.

# Phase 1: Greeting

## Feature: Shout

The tool MUST accept --shout and greet in capitals.

# Phase 2: Later

## Feature: Whisper

The tool MAY whisper.
`;

export const GREET = '#!/bin/sh\necho "Hello, $1"\n';

const node = (kind, heading) => ({ kind, heading, title: heading, summary: "", priority: "", risk: "", estimate: "", dependsOn: [] });
const OUTLINE = {
  nodes: [node("phase", "Phase 1: Greeting"), node("feature", "Feature: Shout"), node("phase", "Phase 2: Later"), node("feature", "Feature: Whisper")],
  next: "",
};
const task = (title, check, risk, ...deps) => ({
  title,
  kind: "file_edit",
  criteria: [title],
  checks: [check],
  files: [],
  dependsOn: deps,
  estimate: "S",
  risk,
  excerpt: "The tool MUST accept --shout and greet in capitals.",
});
const S1 = "S1 make greet.sh accept --shout";
const TASKS = {
  tasks: [
    task(S1, "sh greet.sh --shout bob | grep -q 'HELLO, BOB'", "low"),
    task("S2 add test_greet.sh", "sh test_greet.sh", "high", S1),
    task("S3 document --shout", "grep -q -- --shout README.md", "low", "S2 add test_greet.sh"),
  ],
  next: "",
};
const work = (marker, command) => ({ match: marker, steps: [{ text: "Working on it.", tool_calls: [{ command }] }, { text: "The task is complete." }] });

export const PROJECT_SCRIPT = {
  rules: [
    { match: "[blueprint chunk 1/1 cursor=start]", steps: [{ text: JSON.stringify(OUTLINE) }] },
    { match: "[blueprint tasks n_", steps: [{ text: JSON.stringify(TASKS) }] },
    { match: "Review task", steps: [{ text: JSON.stringify({ pass: true, findings: "the diff does what the task says" }) }] },
    work("S1 make greet.sh", `printf '%s\\n' '#!/bin/sh' 'if [ "$1" = "--shout" ]; then echo "Hello, $2" | tr a-z A-Z; else echo "Hello, $1"; fi' > greet.sh`),
    work("S2 add test_greet.sh", `printf '%s\\n' 'set -e' 'sh greet.sh bob | grep -q "Hello, bob"' 'sh greet.sh --shout bob | grep -q "HELLO, BOB"' > test_greet.sh`),
    work("S3 document", `printf '%s\\n' '' 'Use --shout to greet in capitals.' >> README.md`),
  ],
  default: [{ text: "The task is complete." }],
};
