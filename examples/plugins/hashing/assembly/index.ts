// hashing is an N-Agent plugin written in AssemblyScript. It is a plain WASI
// preview 1 command: it reads one JSON request on stdin and writes one JSON
// result on stdout (see wasm/README.md), with no imports beyond WASI and no
// SDK. Its one tool, sha256, hashes the UTF-8 bytes of a text.

@external("wasi_snapshot_preview1", "fd_read")
declare function fd_read(fd: i32, iovs: usize, iovsLen: i32, nread: usize): i32;
@external("wasi_snapshot_preview1", "fd_write")
declare function fd_write(fd: i32, iovs: usize, iovsLen: i32, nwritten: usize): i32;
@external("wasi_snapshot_preview1", "proc_exit")
declare function proc_exit(code: i32): void;

// Bytes is a growable byte buffer.
class Bytes {
  buf: Uint8Array = new Uint8Array(256);
  len: i32 = 0;

  push(b: u8): void {
    if (this.len == this.buf.length) {
      const bigger = new Uint8Array(this.buf.length * 2);
      memory.copy(bigger.dataStart, this.buf.dataStart, this.len);
      this.buf = bigger;
    }
    this.buf[this.len++] = b;
  }

  equals(s: string): bool {
    if (this.len != s.length) return false;
    for (let i = 0; i < this.len; i++) {
      if (<i32>this.buf[i] != s.charCodeAt(i)) return false;
    }
    return true;
  }
}

let input = new Uint8Array(0);
let inputLen = 0;
let pos = 0;

// _start is the WASI command entry point.
export function _start(): void {
  readInput();
  const tool = new Bytes();
  const text = new Bytes();
  let haveText = false;
  expect(0x7b); // {
  ws();
  if (peek() != 0x7d) {
    while (true) {
      const key = new Bytes();
      ws();
      readString(key);
      expect(0x3a); // :
      ws();
      if (key.equals("tool")) {
        readString(tool);
      } else if (key.equals("arguments") && peek() == 0x7b) {
        pos++;
        ws();
        if (peek() != 0x7d) {
          while (true) {
            const arg = new Bytes();
            ws();
            readString(arg);
            expect(0x3a);
            ws();
            if (arg.equals("text") && peek() == 0x22) {
              readString(text);
              haveText = true;
            } else {
              skipValue();
            }
            ws();
            if (peek() != 0x2c) break; // ,
            pos++;
          }
        }
        expect(0x7d);
      } else {
        skipValue();
      }
      ws();
      if (peek() != 0x2c) break;
      pos++;
    }
  }
  expect(0x7d);

  if (!tool.equals("sha256")) {
    writeError("unknown tool; this plugin has only sha256");
    return;
  }
  if (!haveText) {
    writeError("sha256: arguments.text must be a string");
    return;
  }
  writeOut('{"content":{"hex":"' + sha256Hex(text.buf.dataStart, text.len) + '"}}\n');
}

// abort replaces AssemblyScript's default abort, which would import env.abort.
function abort(message: string | null, file: string | null, line: u32, column: u32): void {
  writeError("aborted: " + (message !== null ? message : "") + " at " + (file !== null ? file : "") + ":" + line.toString());
  proc_exit(1);
  unreachable();
}

function readInput(): void {
  input = new Uint8Array(4096);
  const iov = memory.data(8);
  const nread = memory.data(4);
  while (true) {
    if (inputLen == input.length) {
      const bigger = new Uint8Array(input.length * 2);
      memory.copy(bigger.dataStart, input.dataStart, inputLen);
      input = bigger;
    }
    store<u32>(iov, <u32>(input.dataStart + inputLen));
    store<u32>(iov, <u32>(input.length - inputLen), 4);
    const errno = fd_read(0, iov, 1, nread);
    if (errno != 0) fail("read stdin: errno " + errno.toString());
    const n = load<u32>(nread);
    if (n == 0) break;
    inputLen += n;
  }
}

function writeFd(fd: i32, s: string): void {
  const data = String.UTF8.encode(s);
  const iov = memory.data(8);
  const nwritten = memory.data(4);
  let off: usize = 0;
  const total = <usize>data.byteLength;
  while (off < total) {
    store<u32>(iov, <u32>(changetype<usize>(data) + off));
    store<u32>(iov, <u32>(total - off), 4);
    if (fd_write(fd, iov, 1, nwritten) != 0) return;
    off += load<u32>(nwritten);
  }
}

function writeOut(s: string): void {
  writeFd(1, s);
}

function writeError(message: string): void {
  let escaped = "";
  for (let i = 0; i < message.length; i++) {
    const c = message.charCodeAt(i);
    if (c == 0x22 || c == 0x5c) escaped += "\\" + String.fromCharCode(c);
    else if (c < 0x20) escaped += " ";
    else escaped += String.fromCharCode(c);
  }
  writeOut('{"error":"' + escaped + '"}\n');
}

function fail(message: string): void {
  writeError(message);
  proc_exit(0);
  unreachable();
}

// A minimal JSON reader: enough to find strings and skip everything else.

function peek(): i32 {
  return pos < inputLen ? <i32>input[pos] : -1;
}

function ws(): void {
  while (pos < inputLen) {
    const c = input[pos];
    if (c != 0x20 && c != 0x09 && c != 0x0a && c != 0x0d) break;
    pos++;
  }
}

function expect(c: i32): void {
  ws();
  if (peek() != c) fail("request is not valid JSON: want '" + String.fromCharCode(c) + "' at byte " + pos.toString());
  pos++;
}

function hexValue(c: i32): i32 {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  fail("request is not valid JSON: bad \\u escape at byte " + pos.toString());
  return 0;
}

function readHex4(): i32 {
  if (pos + 4 > inputLen) fail("request is not valid JSON: short \\u escape");
  let v = 0;
  for (let i = 0; i < 4; i++) v = (v << 4) | hexValue(<i32>input[pos++]);
  return v;
}

function pushUTF8(out: Bytes, cp: i32): void {
  if (cp < 0x80) {
    out.push(<u8>cp);
  } else if (cp < 0x800) {
    out.push(<u8>(0xc0 | (cp >> 6)));
    out.push(<u8>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push(<u8>(0xe0 | (cp >> 12)));
    out.push(<u8>(0x80 | ((cp >> 6) & 0x3f)));
    out.push(<u8>(0x80 | (cp & 0x3f)));
  } else {
    out.push(<u8>(0xf0 | (cp >> 18)));
    out.push(<u8>(0x80 | ((cp >> 12) & 0x3f)));
    out.push(<u8>(0x80 | ((cp >> 6) & 0x3f)));
    out.push(<u8>(0x80 | (cp & 0x3f)));
  }
}

// readString decodes the JSON string at pos into UTF-8 bytes.
function readString(out: Bytes): void {
  expect(0x22);
  while (true) {
    if (pos >= inputLen) fail("request is not valid JSON: unterminated string");
    const c = <i32>input[pos++];
    if (c == 0x22) return;
    if (c != 0x5c) {
      out.push(<u8>c);
      continue;
    }
    if (pos >= inputLen) fail("request is not valid JSON: unterminated string");
    const e = <i32>input[pos++];
    if (e == 0x6e) out.push(0x0a);
    else if (e == 0x74) out.push(0x09);
    else if (e == 0x72) out.push(0x0d);
    else if (e == 0x62) out.push(0x08);
    else if (e == 0x66) out.push(0x0c);
    else if (e == 0x75) {
      let cp = readHex4();
      if (cp >= 0xd800 && cp < 0xdc00 && pos + 1 < inputLen && input[pos] == 0x5c && input[pos + 1] == 0x75) {
        pos += 2;
        const lo = readHex4();
        if (lo >= 0xdc00 && lo < 0xe000) {
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        } else {
          pushUTF8(out, 0xfffd);
          cp = lo;
        }
      } else if (cp >= 0xd800 && cp < 0xe000) {
        cp = 0xfffd;
      }
      pushUTF8(out, cp);
    } else out.push(<u8>e); // \" \\ \/
  }
}

function skipValue(): void {
  ws();
  const c = peek();
  if (c == 0x22) {
    readString(new Bytes());
  } else if (c == 0x7b || c == 0x5b) {
    const close = c == 0x7b ? 0x7d : 0x5d;
    pos++;
    ws();
    if (peek() == close) {
      pos++;
      return;
    }
    while (true) {
      if (c == 0x7b) {
        ws();
        readString(new Bytes());
        expect(0x3a);
      }
      skipValue();
      ws();
      if (peek() != 0x2c) break;
      pos++;
    }
    expect(close);
  } else {
    while (pos < inputLen) {
      const d = input[pos];
      if (d == 0x2c || d == 0x7d || d == 0x5d || d == 0x20 || d == 0x09 || d == 0x0a || d == 0x0d) break;
      pos++;
    }
  }
}

// SHA-256 (FIPS 180-4).

const K: StaticArray<u32> = [
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

const H = new StaticArray<u32>(8);
const W = new StaticArray<u32>(64);
const block = new Uint8Array(64);

function compress(p: usize): void {
  for (let i = 0; i < 16; i++) {
    W[i] = bswap<u32>(load<u32>(p + (<usize>i << 2)));
  }
  for (let i = 16; i < 64; i++) {
    const w15 = W[i - 15];
    const w2 = W[i - 2];
    const s0 = rotr<u32>(w15, 7) ^ rotr<u32>(w15, 18) ^ (w15 >>> 3);
    const s1 = rotr<u32>(w2, 17) ^ rotr<u32>(w2, 19) ^ (w2 >>> 10);
    W[i] = W[i - 16] + s0 + W[i - 7] + s1;
  }
  let a = H[0], b = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
  for (let i = 0; i < 64; i++) {
    const S1 = rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25);
    const ch = (e & f) ^ (~e & g);
    const t1 = h + S1 + ch + K[i] + W[i];
    const S0 = rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22);
    const maj = (a & b) ^ (a & c) ^ (b & c);
    const t2 = S0 + maj;
    h = g; g = f; f = e; e = d + t1;
    d = c; c = b; b = a; a = t1 + t2;
  }
  H[0] += a; H[1] += b; H[2] += c; H[3] += d; H[4] += e; H[5] += f; H[6] += g; H[7] += h;
}

function sha256Hex(data: usize, len: i32): string {
  H[0] = 0x6a09e667; H[1] = 0xbb67ae85; H[2] = 0x3c6ef372; H[3] = 0xa54ff53a;
  H[4] = 0x510e527f; H[5] = 0x9b05688c; H[6] = 0x1f83d9ab; H[7] = 0x5be0cd19;
  let off = 0;
  while (len - off >= 64) {
    compress(data + <usize>off);
    off += 64;
  }
  const rest = len - off;
  memory.fill(block.dataStart, 0, 64);
  memory.copy(block.dataStart, data + <usize>off, rest);
  block[rest] = 0x80;
  if (rest >= 56) {
    compress(block.dataStart);
    memory.fill(block.dataStart, 0, 64);
  }
  const bits = <u64>len << 3;
  store<u64>(block.dataStart + 56, bswap<u64>(bits));
  compress(block.dataStart);
  let hex = "";
  for (let i = 0; i < 8; i++) {
    hex += H[i].toString(16).padStart(8, "0");
  }
  return hex;
}
