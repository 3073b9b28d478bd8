// The official Codex SDK drives `apserver exec` (codexPathOverride) against
// `apserver fake-model`: run(), runStreamed() with its item events, a
// structured-output run and a resumed thread. Every line apserver prints is
// checked against the SDK's own declared types (sdktypes.mjs).
//
//   APSERVER_TEST_BIN=/path/to/apserver node --test sdk.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Codex } from '@openai/codex-sdk';
import { loadSdkTypes, check } from './sdktypes.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = process.env.APSERVER_TEST_BIN;
const types = loadSdkTypes();

let model; // the fake-model process
let baseUrl;
let tmp;
let workspace;
let eventLog;
let argsLog;
let codex;

before(async () => {
  assert.ok(bin && existsSync(bin), 'APSERVER_TEST_BIN must name the apserver binary');
  tmp = mkdtempSync(path.join(tmpdir(), 'apserver-sdk-'));
  workspace = mkdtempSync(path.join(tmp, 'ws-'));
  eventLog = path.join(tmp, 'events.jsonl');
  argsLog = path.join(tmp, 'args.txt');
  model = spawn(bin, ['fake-model', '--script', path.join(here, 'script.json')], { stdio: ['pipe', 'pipe', 'inherit'] });
  baseUrl = await new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: model.stdout });
    rl.once('line', (l) => resolve(l.trim()));
    model.once('exit', (code) => reject(new Error(`fake-model exited with ${code}`)));
  });
  codex = new Codex({
    codexPathOverride: path.join(here, 'apserver-codex.sh'),
    baseUrl,
    apiKey: 'sdk-test-key',
    // A fresh home: apserver's config and data dir (threads, for resume)
    // live there, apart from the user's.
    env: {
      PATH: process.env.PATH,
      HOME: tmp,
      XDG_CONFIG_HOME: path.join(tmp, 'config'),
      XDG_DATA_HOME: path.join(tmp, 'data'),
      APSERVER_BIN: bin,
      SDK_EVENT_LOG: eventLog,
      SDK_ARGS_LOG: argsLog,
    },
  });
});

after(() => {
  model?.kill('SIGTERM');
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

const threadOptions = () => ({
  model: 'scripted-model',
  workingDirectory: workspace,
  skipGitRepoCheck: true,
  sandboxMode: 'workspace-write',
  approvalPolicy: 'never',
});

// lines returns what apserver printed since the last call, each line
// checked against the SDK's ThreadEvent type.
let seen = 0;
function lines() {
  const all = existsSync(eventLog) ? readFileSync(eventLog, 'utf8').split('\n').filter(Boolean) : [];
  const fresh = all.slice(seen);
  seen = all.length;
  const events = fresh.map((l) => JSON.parse(l));
  for (const [i, e] of events.entries()) {
    const why = check(types, 'ThreadEvent', e);
    assert.equal(why, null, `line ${i} does not match the SDK's ThreadEvent: ${why}\n${fresh[i]}`);
  }
  return events;
}

function lastArgs() {
  return readFileSync(argsLog, 'utf8').trim().split('\n').at(-1);
}

const kinds = (events) => events.map((e) => (e.item ? `${e.type} ${e.item.type}` : e.type));

test('run() returns the answer, the items and the usage', async () => {
  const thread = codex.startThread(threadOptions());
  const result = await thread.run('sdk-run: say hello');
  assert.equal(result.finalResponse, 'Hello from apserver.');
  assert.deepEqual(result.items.map((i) => i.type), ['reasoning', 'agent_message']);
  assert.equal(result.items[0].text, 'A greeting; answer it.');
  assert.equal(check(types, 'Usage', result.usage), null);
  assert.ok(result.usage.input_tokens > 0 && result.usage.output_tokens > 0, JSON.stringify(result.usage));
  assert.match(thread.id, /^[0-9a-f-]{36}$/);
  const events = lines();
  assert.deepEqual(kinds(events), ['thread.started', 'turn.started', 'item.completed reasoning', 'item.completed agent_message', 'turn.completed']);
  assert.equal(events[0].thread_id, thread.id);
  // What the SDK spawned: codex exec's flags, all accepted.
  const args = lastArgs();
  for (const want of ['exec --experimental-json', `openai_base_url="${baseUrl}"`, '--model scripted-model', '--sandbox workspace-write',
    `--cd ${workspace}`, '--skip-git-repo-check', 'approval_policy="never"']) {
    assert.ok(args.includes(want), `${want} not in ${args}`);
  }
});

test('runStreamed() streams commands, the plan, file changes and the answer', async () => {
  const thread = codex.startThread(threadOptions());
  const { events } = await thread.runStreamed('sdk-stream: run a command and write a file');
  const got = [];
  for await (const e of events) {
    assert.equal(check(types, 'ThreadEvent', e), null, JSON.stringify(e));
    got.push(e);
  }
  assert.deepEqual(kinds(got), [
    'thread.started', 'turn.started',
    'item.completed reasoning',
    'item.started todo_list',
    'item.started command_execution', 'item.completed command_execution',
    'item.completed file_change',
    'item.started mcp_tool_call', 'item.completed mcp_tool_call',
    'item.updated todo_list',
    'item.completed agent_message',
    'item.completed todo_list',
    'turn.completed',
  ]);
  const item = (type, kind = 'item.completed') => got.find((e) => e.type === kind && e.item.type === type).item;
  const started = item('command_execution', 'item.started');
  const cmd = item('command_execution');
  assert.equal(started.id, cmd.id);
  assert.equal(started.status, 'in_progress');
  assert.equal(cmd.status, 'completed');
  assert.equal(cmd.exit_code, 0);
  assert.match(cmd.aggregated_output, /from-the-sdk/);
  assert.deepEqual(item('file_change').changes, [{ path: path.join(workspace, 'sdk.txt'), kind: 'add' }]);
  assert.equal(readFileSync(path.join(workspace, 'sdk.txt'), 'utf8'), 'written through the SDK\n');
  assert.deepEqual(item('todo_list', 'item.started').items, [{ text: 'run', completed: false }, { text: 'write', completed: false }]);
  assert.deepEqual(item('todo_list').items, [{ text: 'run', completed: true }, { text: 'write', completed: true }]);
  // apserver's read tools have no codex exec item: they come as MCP calls.
  const read = item('mcp_tool_call');
  assert.equal(read.server, 'apserver');
  assert.equal(read.tool, 'read_file');
  assert.deepEqual(read.arguments, { path: 'sdk.txt' });
  assert.equal(read.status, 'completed');
  assert.match(read.result.content[0].text, /written through the SDK/);
  assert.equal(item('agent_message').text, 'Ran the command and wrote sdk.txt.');
  assert.equal(lines().length, got.length);
});

test('outputSchema: the final response is the JSON', async () => {
  const thread = codex.startThread(threadOptions());
  const schema = {
    type: 'object',
    properties: { answer: { type: 'string' }, ok: { type: 'boolean' } },
    required: ['answer', 'ok'],
    additionalProperties: false,
  };
  const result = await thread.run('sdk-schema: answer in JSON', { outputSchema: schema });
  assert.deepEqual(JSON.parse(result.finalResponse), { answer: '42', ok: true });
  assert.match(lastArgs(), /--output-schema \S+schema\.json/);
  lines();
});

test('resumeThread(id) continues the same thread', async () => {
  const first = codex.startThread(threadOptions());
  await first.run('sdk-first: remember plum');
  const id = first.id;
  lines();
  const again = codex.resumeThread(id, threadOptions());
  const result = await again.run('sdk-again: what was the word?');
  assert.equal(result.finalResponse, 'The word was plum.');
  assert.equal(again.id, id);
  const events = lines();
  assert.equal(events[0].type, 'thread.started');
  assert.equal(events[0].thread_id, id);
  assert.match(lastArgs(), new RegExp(`resume ${id}$`));
});

test('a failed turn rejects run() with the model error', async () => {
  const thread = codex.startThread(threadOptions());
  await assert.rejects(thread.run('sdk-fail: break'), /the model refused/);
  const events = lines();
  assert.equal(events.at(-1).type, 'turn.failed');
});
