// frame-checker.mjs: checks that a byte stream is newline-delimited JSON-RPC
// frames and nothing else. Used by the peer clients to prove that a program
// under test (an agent, or podbot in front of one) wrote protocol frames only
// on its stdout: no banner, no log line, no partial frame at the end.
//
// Memory stays bounded: at most one frame (maxFrameBytes) is held at a time,
// and only a few short samples of invalid lines are kept.

const defaultMaxFrameBytes = 64 << 20;
const maxSamples = 5;
const sampleChars = 200;

/**
 * FrameChecker validates newline-delimited JSON-RPC frames fed to push().
 * A frame is valid when it is one JSON object with a string `method` or an
 * `id` key and, when requireVersion is set, `"jsonrpc": "2.0"`. A trailing
 * "\r" before the newline is accepted.
 */
export class FrameChecker {
  constructor({ requireVersion = true, maxFrameBytes = defaultMaxFrameBytes } = {}) {
    this.requireVersion = requireVersion;
    this.maxFrameBytes = maxFrameBytes;
    this.bytes = 0;
    this.frames = 0;
    this.invalid = 0;
    this.invalidSamples = [];
    this.pending = [];
    this.pendingBytes = 0;
    this.oversized = false;
  }

  /** push feeds the next chunk (a Buffer or Uint8Array) of the stream. */
  push(chunk) {
    this.bytes += chunk.length;
    let buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let nl;
    while ((nl = buf.indexOf(0x0a)) !== -1) {
      this.appendPending(buf.subarray(0, nl));
      this.finishLine();
      buf = buf.subarray(nl + 1);
    }
    this.appendPending(buf);
  }

  appendPending(part) {
    if (part.length === 0 || this.oversized) return;
    this.pendingBytes += part.length;
    if (this.pendingBytes > this.maxFrameBytes) {
      this.oversized = true;
      this.pending = [];
      return;
    }
    this.pending.push(Buffer.from(part));
  }

  finishLine() {
    if (this.oversized) {
      this.reject(`<frame over ${this.maxFrameBytes} bytes>`);
    } else {
      let line = Buffer.concat(this.pending).toString("utf8");
      if (line.endsWith("\r")) line = line.slice(0, -1);
      this.check(line);
    }
    this.pending = [];
    this.pendingBytes = 0;
    this.oversized = false;
  }

  check(line) {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      this.reject(line);
      return;
    }
    const ok =
      msg !== null &&
      typeof msg === "object" &&
      !Array.isArray(msg) &&
      (!this.requireVersion || msg.jsonrpc === "2.0") &&
      (typeof msg.method === "string" || "id" in msg);
    if (ok) this.frames++;
    else this.reject(line);
  }

  reject(line) {
    this.invalid++;
    if (this.invalidSamples.length < maxSamples) {
      this.invalidSamples.push(line.length > sampleChars ? `${line.slice(0, sampleChars)}...` : line);
    }
  }

  /**
   * summary reports what was seen. partialTail is the number of bytes after
   * the last newline (a frame that was never finished).
   */
  summary() {
    return {
      bytes: this.bytes,
      frames: this.frames,
      invalid: this.invalid,
      invalidSamples: this.invalidSamples,
      partialTail: this.pendingBytes,
    };
  }

  /** clean is true when every byte belonged to a complete, valid frame. */
  clean() {
    return this.invalid === 0 && this.pendingBytes === 0;
  }
}
