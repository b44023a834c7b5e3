// The service worker: connects to the harness's loopback WebSocket bridge, receives `browser_*` tool
// calls as {id, method, params} and answers {id, ok, result | error}. Tools run in the tab through
// chrome.scripting (agent.js in the isolated world), chrome.tabs, chrome.webNavigation and chrome.debugger.
//
// MV3 may stop this worker at any time; every start runs connect() again, so the harness sees a new
// hello and resends. Nothing needed across restarts lives in globals: the ref counter of each tab is
// kept in chrome.storage.session.
"use strict";

importScripts("config.js");

const SETTLE_BUDGET_MS = 1500; // web_bench/browser/contract.py SETTLE_BUDGET_MS
const SETTLE_QUIET_MS = 120; // SETTLE_QUIET_MS
const ACTION_TIMEOUT_MS = 5000; // ACTION_TIMEOUT_MS
const NAVIGATION_TIMEOUT_MS = 20000; // NAVIGATION_TIMEOUT_MS
const WAIT_FOR_MAX_S = 30; // WAIT_FOR_MAX_S
const RECONNECT_MS = 500;
const BOOT = Math.random().toString(36).slice(2);

let socket = null;

function connect() {
  const bridge = self.FARM_BRIDGE;
  if (!bridge || socket) return;
  const ws = new WebSocket("ws://127.0.0.1:" + bridge.port + "/");
  socket = ws;
  ws.onopen = () => {
    ws.send(JSON.stringify({ hello: true, token: bridge.token, boot: BOOT, version: chrome.runtime.getManifest().version }));
  };
  ws.onmessage = (event) => { handle(ws, event.data); };
  ws.onclose = () => {
    if (socket === ws) socket = null;
    setTimeout(connect, RECONNECT_MS);
  };
}

async function handle(ws, data) {
  let message;
  try { message = JSON.parse(data); } catch (e) { return; }
  const reply = { id: message.id };
  try {
    reply.result = await dispatch(message.method, message.params || {});
    reply.ok = true;
  } catch (e) {
    reply.ok = false;
    reply.error = String((e && e.message) || e);
  }
  if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(reply));
}

// -- tabs and navigation ------------------------------------------------------------------------

async function currentTab() {
  let [tab] = await chrome.tabs.query({ active: true, lastFocusedWindow: true });
  if (!tab) [tab] = await chrome.tabs.query({});
  if (!tab) throw new Error("no browser tab to act on");
  return tab.id;
}

// Top-frame navigations in flight, per tab: started but not yet at DOMContentLoaded (or failed).
const pending = new Map();
const waiters = [];

function navEvent(details, done, error) {
  if (details.frameId !== 0) return;
  if (done) pending.delete(details.tabId);
  else pending.set(details.tabId, details.url);
  for (const w of waiters.slice()) w(details.tabId, done, error);
}
chrome.webNavigation.onBeforeNavigate.addListener((d) => navEvent(d, false));
chrome.webNavigation.onCommitted.addListener((d) => navEvent(d, false));
chrome.webNavigation.onDOMContentLoaded.addListener((d) => navEvent(d, true));
chrome.webNavigation.onErrorOccurred.addListener((d) => navEvent(d, true, d.error));
// Same-document navigations (a fragment, history.pushState) start and end in one event.
chrome.webNavigation.onReferenceFragmentUpdated.addListener((d) => navEvent(d, true));
chrome.webNavigation.onHistoryStateUpdated.addListener((d) => navEvent(d, true));
// A tab event is one of the ways the harness can wake this worker (see the README).
chrome.tabs.onUpdated.addListener(() => connect());

// Resolves once tab `tabId` has no navigation in flight (after `trigger` ran), or rejects on a
// navigation error or after `timeoutMs`. `expect`: wait for a navigation to start first.
function navigation(tabId, trigger, timeoutMs, expect) {
  return new Promise((resolve, reject) => {
    let started = !expect;
    const finish = (error) => {
      clearTimeout(timer);
      const i = waiters.indexOf(waiter);
      if (i >= 0) waiters.splice(i, 1);
      if (error) reject(new Error(error)); else resolve();
    };
    const waiter = (tab, done, error) => {
      if (tab !== tabId) return;
      if (!done) { started = true; return; }
      finish(error && error !== "net::ERR_ABORTED" ? "navigation failed: " + error : null);
    };
    const timer = setTimeout(() => finish(started ? "navigation did not reach DOMContentLoaded within "
      + timeoutMs / 1000 + " s" : "no navigation started within " + timeoutMs / 1000 + " s"), timeoutMs);
    waiters.push(waiter);
    Promise.resolve(trigger()).then(() => {
      if (!expect && !pending.has(tabId)) finish(null);
    }, (e) => finish(String((e && e.message) || e)));
  });
}

// -- the in-page agent --------------------------------------------------------------------------

async function agent(tabId, op, args) {
  const run = (op, args) => (globalThis.__farmAgent ? globalThis.__farmAgent.run(op, args) : { missing: true });
  const inject = () => chrome.scripting.executeScript({ target: { tabId }, func: run, args: [op, args] });
  let [frame] = await inject();
  let out = frame && frame.result;
  if (out && out.missing) {
    // A page that was already open when the extension loaded has no content script yet.
    await chrome.scripting.executeScript({ target: { tabId }, files: ["agent.js"] });
    [frame] = await inject();
    out = frame && frame.result;
  }
  if (!out) throw new Error("the page went away during " + op + " (it navigated); take a new browser_snapshot");
  if (!out.ok) throw new Error(out.error);
  return out.value;
}

// After an action: loaded, then quiet, within the shared budget (a navigation may restart the wait).
async function settle(tabId) {
  const deadline = Date.now() + SETTLE_BUDGET_MS;
  for (let i = 0; i < 3; i += 1) {
    if (pending.has(tabId)) {
      await navigation(tabId, () => null, NAVIGATION_TIMEOUT_MS, false).catch(() => null);
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0 && i > 0) return;
    try {
      await agent(tabId, "settle", { quiet: SETTLE_QUIET_MS, budget: Math.max(remaining, SETTLE_QUIET_MS) });
    } catch (e) {
      continue; // the document was replaced mid-wait; wait for the new one
    }
    if (!pending.has(tabId)) return;
  }
}

async function refBase(tabId) {
  const key = "refs:" + tabId;
  const stored = await chrome.storage.session.get(key);
  return [key, stored[key] || 0];
}

async function snapshot(tabId) {
  const [key, base] = await refBase(tabId);
  const snap = await agent(tabId, "snapshot", { base });
  // Refs keep counting across documents of a tab, so a ref from an old page never names an element of a new one.
  if (snap.nextRef > base) await chrome.storage.session.set({ [key]: snap.nextRef });
  return { url: snap.url, title: snap.title, tree: snap.tree };
}

async function afterAction(tabId, note) {
  await settle(tabId);
  const snap = await snapshot(tabId);
  if (note) snap.note = note;
  return snap;
}

// -- chrome.debugger: keys and screenshots -------------------------------------------------------

// The debugger stays attached once attached: attaching for every call would cost a round trip each time.
const attached = new Set();
chrome.debugger.onDetach.addListener((source) => attached.delete(source.tabId));

async function withDebugger(tabId, fn) {
  const target = { tabId };
  if (!attached.has(tabId)) {
    try {
      await chrome.debugger.attach(target, "1.3");
    } catch (e) {
      // Still attached from before this worker restarted.
      if (!/already attached/i.test(String(e && e.message))) throw e;
    }
    attached.add(tabId);
  }
  return fn((method, params) => chrome.debugger.sendCommand(target, method, params || {}));
}

// A trusted click (with user activation, as a person's) at the element's centre when nothing covers
// it; otherwise a DOM click on the element itself, never a click on whatever lies on top.
async function click(tabId, ref) {
  const at = await agent(tabId, "point", { ref, timeoutMs: ACTION_TIMEOUT_MS });
  if (!at.hit) {
    await agent(tabId, "click", { ref, timeoutMs: ACTION_TIMEOUT_MS });
    return;
  }
  await withDebugger(tabId, async (send) => {
    const base = { x: at.x, y: at.y, button: "left", clickCount: 1 };
    await send("Input.dispatchMouseEvent", { type: "mouseMoved", x: at.x, y: at.y });
    await send("Input.dispatchMouseEvent", { ...base, type: "mousePressed", buttons: 1 });
    await send("Input.dispatchMouseEvent", { ...base, type: "mouseReleased", buttons: 0 });
  });
}

const KEYS = {
  Enter: [13, "\r"], Tab: [9, ""], Escape: [27, ""], Backspace: [8, ""], Delete: [46, ""], Space: [32, " "],
  ArrowLeft: [37, ""], ArrowUp: [38, ""], ArrowRight: [39, ""], ArrowDown: [40, ""], Home: [36, ""],
  End: [35, ""], PageUp: [33, ""], PageDown: [34, ""], Insert: [45, ""],
};

function keyEvent(key) {
  if (KEYS[key]) {
    const [code, text] = KEYS[key];
    return { key: key === "Space" ? " " : key, code: key, windowsVirtualKeyCode: code, text };
  }
  if (key.length === 1) {
    const upper = key.toUpperCase();
    const code = /[A-Z]/.test(upper) ? "Key" + upper : /[0-9]/.test(key) ? "Digit" + key : "";
    return { key, code, windowsVirtualKeyCode: upper.charCodeAt(0), text: key };
  }
  if (/^F([1-9]|1[0-2])$/.test(key)) return { key, code: key, windowsVirtualKeyCode: 111 + Number(key.slice(1)), text: "" };
  throw new Error("unknown key " + JSON.stringify(key) + " (use a key name such as Enter or ArrowLeft, or one character)");
}

async function pressKey(tabId, key) {
  const ev = keyEvent(key);
  // Real key events through the browser's input pipeline: Enter submits forms, Tab moves focus.
  await withDebugger(tabId, async (send) => {
    const base = { key: ev.key, code: ev.code, windowsVirtualKeyCode: ev.windowsVirtualKeyCode };
    await send("Input.dispatchKeyEvent", { ...base, type: ev.text ? "keyDown" : "rawKeyDown", text: ev.text || undefined });
    await send("Input.dispatchKeyEvent", { ...base, type: "keyUp" });
  });
}

// Runs `action` and waits for the navigation it may start (a click on a link, a submit).
async function act(tabId, action) {
  await action();
  // A navigation the page asked for reaches the browser a moment after the event handler returns.
  await new Promise((r) => setTimeout(r, 30));
}

// -- tools ---------------------------------------------------------------------------------------

async function dispatch(method, params) {
  if (method === "ping") return { boot: BOOT };
  const tabId = await currentTab();
  switch (method) {
    case "browser_navigate":
      await navigation(tabId, () => chrome.tabs.update(tabId, { url: params.url }), NAVIGATION_TIMEOUT_MS, true);
      return afterAction(tabId);
    case "browser_navigate_back":
      await navigation(tabId, () => chrome.tabs.goBack(tabId), NAVIGATION_TIMEOUT_MS, true);
      return afterAction(tabId);
    case "browser_snapshot":
      return snapshot(tabId);
    case "browser_click":
      await act(tabId, () => click(tabId, params.ref));
      return afterAction(tabId);
    case "browser_type":
      await act(tabId, () => agent(tabId, "type", { ref: params.ref, text: params.text, timeoutMs: ACTION_TIMEOUT_MS }));
      if (params.submit) await act(tabId, () => pressKey(tabId, "Enter"));
      return afterAction(tabId);
    case "browser_select_option":
      await act(tabId, () => agent(tabId, "select", { ref: params.ref, values: params.values, timeoutMs: ACTION_TIMEOUT_MS }));
      return afterAction(tabId);
    case "browser_press_key":
      await act(tabId, () => pressKey(tabId, params.key));
      return afterAction(tabId);
    case "browser_wait_for": {
      const done = [];
      if (typeof params.time === "number") {
        const s = Math.min(Math.max(params.time, 0), WAIT_FOR_MAX_S);
        await new Promise((r) => setTimeout(r, s * 1000));
        done.push("waited " + params.time + " s");
      }
      const limit = WAIT_FOR_MAX_S * 1000;
      if (typeof params.textGone === "string") {
        await agent(tabId, "waitText", { text: params.textGone, present: false, timeoutMs: limit });
        done.push("text " + JSON.stringify(params.textGone) + " is gone");
      }
      if (typeof params.text === "string") {
        await agent(tabId, "waitText", { text: params.text, present: true, timeoutMs: limit });
        done.push("text " + JSON.stringify(params.text) + " appeared");
      }
      return { ...(await snapshot(tabId)), note: done.join("; ") };
    }
    case "browser_take_screenshot": {
      const tab = await chrome.tabs.get(tabId);
      const shot = await withDebugger(tabId, (send) => send("Page.captureScreenshot", { format: "jpeg", quality: 70 }));
      return { url: tab.url, jpegBase64: shot.data };
    }
    default:
      throw new Error("unknown method " + JSON.stringify(method));
  }
}

// A periodic alarm reconnects a worker the browser stopped while nothing else would start it.
chrome.alarms.create("farm-bridge", { periodInMinutes: 0.5 });
chrome.alarms.onAlarm.addListener(() => connect());

connect();
