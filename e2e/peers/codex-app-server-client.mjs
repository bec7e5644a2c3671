#!/usr/bin/env node
// codex-app-server-client.mjs: a minimal Codex app-server client that drives
// one turn and reports, as ONE JSON line on stdout, what happened.
//
// Usage:
//   node codex-app-server-client.mjs [--prompt TEXT] [--cwd DIR] [--model M]
//        [--timeout-ms N] [--] COMMAND [ARG...]
//
// COMMAND is the app server, e.g. `codex app-server --listen stdio://`, or
// `podbot host --agent codex --agent-mode codex_app_server`. It is spawned with
// piped stdin/stdout (its stderr passes through to ours). The client speaks
// the app-server protocol (JSON-RPC messages, one per line, without the
// "jsonrpc" member): initialize -> initialized -> thread/start -> turn/start,
// then reads notifications until turn/completed for its turn.
//
// Server-to-client requests are answered so that a turn never blocks:
// command and file-change approvals are accepted, the legacy
// execCommandApproval/applyPatchApproval are approved, permission requests are
// granted as asked, user-input and elicitation requests are declined, and
// `item/tool/call` (a dynamic tool that would run on this host) is refused
// with -32601. Every such request is recorded.
//
// --cwd and --model are passed to thread/start only when given (the server's
// own configuration decides otherwise; a host path means nothing to a server
// in a container).
//
// Summary line fields:
//   initialized        initialize answered
//   userAgent          from the initialize response
//   threadId, turnId   from thread/start and turn/start
//   turnStatus         status in turn/completed ("completed", "failed", ...)
//   turnError          the turn's error object, if any
//   toolCalled         a commandExecution item completed during the turn
//   commandExecutions  [{command, exitCode, status, output}] (output capped)
//   agentMessages      texts of completed agentMessage items
//   serverRequests     [{method, answered}] requests the server sent us
//   notifications      {method: count}
//   stdout             {bytes, frames, invalid, invalidSamples, partialTail}
//   stdoutClean        the command's stdout held protocol frames only
//   childExit          {code, signal} of the command after stdin was closed
//   error              first failure, or null
//
// Exit status: 0 when the turn completed with status "completed", the
// command's stdout was clean and nothing failed; 1 otherwise (the summary line
// is printed either way); 2 on a usage error.
import { spawn } from "node:child_process";
import { FrameChecker } from "./frame-checker.mjs";

const maxOutputChars = 4096;
const maxLineBytes = 64 << 20;

function usage(message) {
  process.stderr.write(
    `codex-app-server-client: ${message}\n` +
      "usage: codex-app-server-client.mjs [--prompt TEXT] [--cwd DIR] [--model M] [--timeout-ms N] [--] COMMAND [ARG...]\n",
  );
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { prompt: "podbot-e2e-tool-call", cwd: null, model: null, timeoutMs: 120000, command: [] };
  let i = 0;
  for (; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--") {
      i++;
      break;
    }
    if (!a.startsWith("--")) break;
    const value = argv[i + 1];
    if (value === undefined) usage(`${a} needs a value`);
    if (a === "--prompt") opts.prompt = value;
    else if (a === "--cwd") opts.cwd = value;
    else if (a === "--model") opts.model = value;
    else if (a === "--timeout-ms") opts.timeoutMs = Number(value);
    else usage(`unknown option ${a}`);
    i++;
  }
  opts.command = argv.slice(i);
  if (opts.command.length === 0) usage("no command given");
  if (!Number.isFinite(opts.timeoutMs) || opts.timeoutMs <= 0) usage("--timeout-ms must be a positive number");
  return opts;
}

const opts = parseArgs(process.argv.slice(2));

const summary = {
  initialized: false,
  userAgent: null,
  threadId: null,
  turnId: null,
  turnStatus: null,
  turnError: null,
  toolCalled: false,
  commandExecutions: [],
  agentMessages: [],
  serverRequests: [],
  notifications: {},
  stdout: null,
  stdoutClean: false,
  childExit: null,
  error: null,
};

function fail(message) {
  if (summary.error === null) summary.error = message;
}

const checker = new FrameChecker({ requireVersion: false });
const child = spawn(opts.command[0], opts.command.slice(1), {
  stdio: ["pipe", "pipe", "inherit"],
});
child.stdin.on("error", () => {}); // EPIPE when the server dies; reported via childExit.

let settleTurn;
const turnDone = new Promise((resolve) => {
  settleTurn = resolve;
});

const childExited = new Promise((resolve) => {
  child.on("exit", (code, signal) => resolve({ code, signal }));
  child.on("error", (err) => {
    fail(`spawn failed: ${err.message}`);
    resolve({ code: null, signal: null, spawnError: err.message });
  });
});
childExited.then((exit) => {
  if (summary.turnStatus === null) fail(`command exited before the turn completed (code ${exit.code}, signal ${exit.signal})`);
  settleTurn();
});

function send(message) {
  child.stdin.write(`${JSON.stringify(message)}\n`);
}

let nextId = 0;
const pending = new Map();

function request(method, params) {
  const id = ++nextId;
  send({ id, method, params });
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject, method });
  });
}

function answerServerRequest(msg) {
  const { id, method, params = {} } = msg;
  let result = null;
  let error = null;
  switch (method) {
    case "item/commandExecution/requestApproval":
    case "item/fileChange/requestApproval":
      result = { decision: "accept" };
      break;
    case "execCommandApproval":
    case "applyPatchApproval":
      result = { decision: "approved" };
      break;
    case "item/permissions/requestApproval":
      result = { permissions: params.permissions ?? {}, scope: "turn" };
      break;
    case "item/tool/requestUserInput":
      result = { answers: {} };
      break;
    case "mcpServer/elicitation/request":
      result = { action: "decline", content: null };
      break;
    default:
      error = { code: -32601, message: `${method} is not supported by this test client`, data: { method } };
  }
  summary.serverRequests.push({ method, answered: error === null ? "result" : "error" });
  send(error === null ? { id, result } : { id, error });
}

function onNotification(msg) {
  const { method, params = {} } = msg;
  summary.notifications[method] = (summary.notifications[method] ?? 0) + 1;
  if (method === "item/completed" && params.item) {
    const item = params.item;
    if (item.type === "commandExecution") {
      summary.toolCalled = true;
      const output = typeof item.aggregatedOutput === "string" ? item.aggregatedOutput : "";
      summary.commandExecutions.push({
        command: item.command,
        exitCode: item.exitCode ?? null,
        status: item.status,
        output: output.length > maxOutputChars ? `${output.slice(0, maxOutputChars)}[truncated]` : output,
      });
    } else if (item.type === "agentMessage") {
      summary.agentMessages.push(item.text);
    }
  }
  if (method === "turn/completed" && params.turn && (summary.turnId === null || params.turn.id === summary.turnId)) {
    summary.turnStatus = params.turn.status;
    summary.turnError = params.turn.error ?? null;
    settleTurn();
  }
}

function onMessage(msg) {
  if (msg === null || typeof msg !== "object" || Array.isArray(msg)) return;
  const hasId = "id" in msg;
  if (typeof msg.method === "string" && hasId) {
    answerServerRequest(msg);
  } else if (typeof msg.method === "string") {
    onNotification(msg);
  } else if (hasId && pending.has(msg.id)) {
    const p = pending.get(msg.id);
    pending.delete(msg.id);
    if (msg.error) {
      const e = new Error(`${p.method} failed: ${msg.error.code} ${msg.error.message}`);
      p.reject(e);
    } else {
      p.resolve(msg.result);
    }
  }
}

// Read stdout line by line; the checker sees every byte.
let lineParts = [];
let lineBytes = 0;
child.stdout.on("data", (chunk) => {
  checker.push(chunk);
  let buf = chunk;
  let nl;
  while ((nl = buf.indexOf(0x0a)) !== -1) {
    lineParts.push(buf.subarray(0, nl));
    const line = Buffer.concat(lineParts).toString("utf8");
    lineParts = [];
    lineBytes = 0;
    buf = buf.subarray(nl + 1);
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      continue; // counted by the checker
    }
    onMessage(msg);
  }
  lineBytes += buf.length;
  if (lineBytes > maxLineBytes) {
    lineParts = [];
    lineBytes = 0;
  } else if (buf.length > 0) {
    lineParts.push(Buffer.from(buf));
  }
});
const stdoutEnded = new Promise((resolve) => child.stdout.on("close", resolve));

async function run() {
  const init = await request("initialize", {
    clientInfo: { name: "podbot_e2e", title: "podbot e2e client", version: "0.0.0" },
  });
  summary.initialized = true;
  summary.userAgent = init && init.userAgent ? init.userAgent : null;
  send({ method: "initialized" });

  const threadParams = {};
  if (opts.cwd) threadParams.cwd = opts.cwd;
  if (opts.model) threadParams.model = opts.model;
  const thread = await request("thread/start", threadParams);
  summary.threadId = thread.thread.id;

  const turn = await request("turn/start", {
    threadId: summary.threadId,
    input: [{ type: "text", text: opts.prompt, text_elements: [] }],
  });
  if (turn && turn.turn && summary.turnId === null) summary.turnId = turn.turn.id;
  await turnDone;
}

let timer;
const timedOut = new Promise((resolve) => {
  timer = setTimeout(() => {
    fail(`timed out after ${opts.timeoutMs} ms`);
    resolve();
  }, opts.timeoutMs);
});

await Promise.race([
  run().catch((err) => fail(err.message)),
  timedOut,
  childExited.then(() => new Promise((resolve) => setTimeout(resolve, 500))),
]);

// Half-close stdin and let the server exit on its own.
child.stdin.end();
const graceful = await Promise.race([childExited, new Promise((resolve) => setTimeout(() => resolve(null), 10000))]);
if (graceful === null) {
  child.kill("SIGTERM");
  fail("command did not exit within 10 s after stdin closed; sent SIGTERM");
}
summary.childExit = await childExited;
await Promise.race([stdoutEnded, new Promise((resolve) => setTimeout(resolve, 2000))]);
clearTimeout(timer);

summary.stdout = checker.summary();
summary.stdoutClean = checker.clean();
if (summary.turnStatus !== null && summary.turnStatus !== "completed") fail(`turn ended with status ${summary.turnStatus}`);

const ok = summary.turnStatus === "completed" && summary.stdoutClean && summary.error === null;
process.stdout.write(`${JSON.stringify(summary)}\n`, () => process.exit(ok ? 0 : 1));
