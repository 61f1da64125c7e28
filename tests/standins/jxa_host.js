#!/usr/bin/env node
// A stand-in for `osascript -l JavaScript [-s flags] - ARG...` where no osascript exists (tests on Linux).
//
// It reads the script from stdin and runs it in a `vm` context whose `Application(name)`, `$`, `Path`,
// `Library`, `ObjC`, `delay` and `console` record everything they are asked to do, through Proxies, so
// any app's terminology works: property reads, calls with their arguments, object creation, writes.
// Then, like osascript, it calls `run(argv)` with the arguments after `-` when the script defines it,
// prints the result and a newline, and nothing else. Records go to $AAI_JXA_LOG as JSON lines.
//
// Failures are printed as osascript prints them:
//   execution error: Error: Error: <message> (-2700)                      (an exception, exit 1)
//   <start>:<end>: syntax error: Error on line <n>: SyntaxError: <message> (-2700)   (does not compile)
//
// Configuration (JSON objects keyed by the specifier path, e.g. `Application("Mail").accounts.length`
// for a read, or `Application("Mail").send` for a call):
//   AAI_JXA_RETURNS  path → the value a read or call returns (default: a further recording specifier;
//                    `.length` reads 0)
//   AAI_JXA_THROWS   path → {"message": ..., "number": ...}, an app error the call raises
"use strict";

const fs = require("node:fs");
const vm = require("node:vm");

const GENERIC_ERROR = -2700;
const records = [];
const paths = new WeakMap();

function config(name) {
  const text = process.env[name];
  return text ? JSON.parse(text) : {};
}

const RETURNS = config("AAI_JXA_RETURNS");
const THROWS = config("AAI_JXA_THROWS");

function data(value, seen = new Set()) {
  if (paths.has(value)) return { $specifier: paths.get(value) };
  if (value === undefined) return { $undefined: true };
  if (typeof value === "bigint") return { $bigint: String(value) };
  if (typeof value === "number" && !Number.isFinite(value)) return { $number: String(value) };
  if (typeof value === "function") return { $function: value.name || "anonymous" };
  if (typeof value === "symbol") return { $symbol: String(value) };
  if (value === null || typeof value !== "object") return value;
  if (seen.has(value)) return { $cycle: true };
  seen.add(value);
  if (Array.isArray(value)) return value.map((item) => data(item, seen));
  if (Object.prototype.toString.call(value) === "[object Date]") return { $date: value.toISOString() };
  const out = {};
  for (const key of Object.keys(value)) out[key] = data(value[key], seen);
  return out;
}

function appError(path) {
  const wanted = THROWS[path];
  const error = new Error(wanted.message || `${path} failed`);
  if (Number.isInteger(wanted.number)) error.errorNumber = wanted.number;
  return error;
}

function specifier(path) {
  // A strict function has no own `caller`/`arguments`, so the proxy may answer every property read.
  const target = function () {};
  const proxy = new Proxy(target, {
    get(_target, property) {
      if (typeof property === "symbol") {
        return property === Symbol.toPrimitive ? () => path : undefined;
      }
      if (property === "then") return undefined; // not a promise
      if (property === "toJSON") return () => ({ $specifier: path });
      if (property === "toString" || property === "valueOf") return () => path;
      const child = /^\d+$/.test(property) ? `${path}[${property}]` : `${path}.${property}`;
      records.push({ op: "get", target: path, property });
      if (Object.hasOwn(RETURNS, child)) return RETURNS[child];
      if (property === "length") return 0;
      return specifier(child);
    },
    set(_target, property, value) {
      records.push({ op: "set", target: path, property: String(property), value: data(value) });
      return true;
    },
    apply(_target, _this, args) {
      return invoke("call", path, args);
    },
    construct(_target, args) {
      return invoke("new", path, args);
    },
  });
  paths.set(proxy, path);
  return proxy;
}

function invoke(op, path, args) {
  records.push({ op, target: path, args: data(args) });
  if (Object.hasOwn(THROWS, path)) throw appError(path);
  if (Object.hasOwn(RETURNS, `${path}()`)) return RETURNS[`${path}()`];
  return specifier(`${path}()`);
}

function Application(name) {
  records.push({ op: "application", name: data(name) });
  return specifier(`Application(${JSON.stringify(name)})`);
}
Application.currentApplication = function currentApplication() {
  records.push({ op: "application", name: { $current: true } });
  return specifier("Application.currentApplication()");
};

function globals() {
  return {
    Application,
    $: specifier("$"),
    Path(path) {
      records.push({ op: "path", path: data(path) });
      return specifier(`Path(${JSON.stringify(String(path))})`);
    },
    Library(name) {
      records.push({ op: "library", name: data(name) });
      return specifier(`Library(${JSON.stringify(String(name))})`);
    },
    ObjC: {
      import(name) {
        records.push({ op: "objc-import", name: data(name) });
      },
      unwrap: (value) => value,
      deepUnwrap: (value) => value,
      wrap: (value) => value,
    },
    delay(seconds) {
      records.push({ op: "delay", seconds: data(seconds) });
    },
    console: {
      log(...args) {
        records.push({ op: "log", args: data(args) });
      },
    },
  };
}

function commandLine(args) {
  const flags = { language: "AppleScript", output: "" };
  let i = 0;
  while (args[i] === "-l" || args[i] === "-s") {
    if (args[i] === "-l") flags.language = args[i + 1];
    else flags.output = args[i + 1];
    i += 2;
  }
  if (args[i] !== "-") return null;
  return { flags, argv: args.slice(i + 1) };
}

function shown(value, flags) {
  if (value === undefined) return undefined;
  if (paths.has(value)) return paths.get(value);
  if (typeof value === "string") return flags.output.includes("s") ? JSON.stringify(value) : value;
  if (Array.isArray(value) && !flags.output.includes("s")) return value.map((item) => shown(item, flags)).join(", ");
  if (value === null || typeof value !== "object") return String(value);
  return JSON.stringify(data(value));
}

function describe(error) {
  if (paths.has(error)) return paths.get(error);
  if (error !== null && typeof error === "object" && "message" in error) {
    return `${error.name || "Error"}: ${error.message}`;
  }
  return String(error);
}

function syntaxError(error, source) {
  // V8 puts "<file>:<line>", the line's text and a row of carets under the culprit first in `stack`.
  const lines = String(error.stack).split("\n");
  const line = Number((/:(\d+)$/.exec(lines[0]) || [])[1] || 1);
  const carets = /^(\s*)(\^+)/.exec(lines[2] || "");
  const starts = [0];
  for (const found of source.matchAll(/\r\n|[\n\r\u2028\u2029]/g)) starts.push(found.index + found[0].length);
  const begin = (starts[line - 1] || 0) + (carets ? carets[1].length : 0);
  const end = carets ? begin + carets[2].length : source.length;
  return `${begin}:${end}: syntax error: Error on line ${line}: SyntaxError: ${error.message} (${GENERIC_ERROR})`;
}

function main() {
  const parsed = commandLine(process.argv.slice(2));
  if (parsed === null) {
    process.stderr.write("usage: jxa_host.js [-l JavaScript] [-s flags] - [argument ...] (script on stdin)\n");
    return 2;
  }
  const { flags, argv } = parsed;
  records.push({ op: "argv", argv });
  const source = fs.readFileSync(0, "utf8");
  let script;
  try {
    script = new vm.Script(source, { filename: "script" });
  } catch (error) {
    process.stderr.write(`${syntaxError(error, source)}\n`);
    return 1;
  }
  const context = vm.createContext(globals());
  try {
    let result = script.runInContext(context);
    if (typeof context.run === "function") {
      const list = vm.runInContext("(items) => Array.from(items)", context);
      result = context.run(list(argv));
    }
    const text = shown(result, flags);
    if (text !== undefined) process.stdout.write(`${text}\n`);
    return 0;
  } catch (error) {
    const own = !paths.has(error) && error !== null && typeof error === "object" ? error.errorNumber : undefined;
    const number = Number.isInteger(own) ? own : GENERIC_ERROR;
    process.stderr.write(`execution error: Error: ${describe(error)} (${number})\n`);
    return 1;
  }
}

try {
  process.exitCode = main();
} finally {
  const log = process.env.AAI_JXA_LOG;
  if (log) fs.appendFileSync(log, records.map((entry) => `${JSON.stringify(entry)}\n`).join(""));
}
