// The chat page's only script: sends each message to this server's AG-UI endpoint and shows the
// run's events as they stream (read with fetch and a stream reader). Everything shown is set as
// text, never as HTML, so nothing a model or a tool says can run here.
"use strict";

const body = document.body;
const log = document.getElementById("log");
const ask = document.getElementById("ask");
const input = document.getElementById("message");
const send = document.getElementById("send");
const tokenForm = document.getElementById("token-form");
const tokenInput = document.getElementById("token");
const TOKEN_KEY = "promptimus.chat.token";
const THREAD_KEY = "promptimus.chat.thread";
// the tool calls of the conversation by id: a run resumed after an approval reports its
// call's result in a request of its own, into the card its first request made
const toolCards = new Map();

function newId() {
  if (window.crypto && window.crypto.randomUUID) {
    return window.crypto.randomUUID();
  }
  return String(Date.now()) + "-" + String(Math.random()).slice(2);
}

function thread() {
  let id = window.sessionStorage.getItem(THREAD_KEY);
  if (!id) {
    id = newId();
    window.sessionStorage.setItem(THREAD_KEY, id);
  }
  return id;
}

function token() {
  return window.sessionStorage.getItem(TOKEN_KEY) || "";
}

function needsToken() {
  return body.dataset.token === "required" && !token();
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined && text !== null) {
    node.textContent = String(text);
  }
  return node;
}

function scrolled() {
  window.scrollTo(0, document.body.scrollHeight);
}

function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch (_error) {
    return text;
  }
}

// One run's view: where its text, tool calls and nested agents go.
class RunView {
  constructor(message) {
    this.box = element("div", "run");
    this.texts = new Map();
    this.tools = toolCards;
    this.nested = new Map();
    this.reasoning = null;
    this.message = message;
    log.appendChild(this.box);
  }

  place(event) {
    const nested = event.subagentRunId && this.nested.get(event.subagentRunId);
    return nested || this.box;
  }

  text(event) {
    let node = this.texts.get(event.messageId);
    if (!node) {
      node = element("div", "bubble assistant");
      node.dataset.messageId = event.messageId;
      this.texts.set(event.messageId, node);
      this.place(event).appendChild(node);
    }
    return node;
  }

  tool(id, name, event) {
    let card = this.tools.get(id);
    if (!card) {
      card = element("details", "tool");
      card.open = true;
      card.dataset.toolCallId = id;
      const summary = element("summary", null, "");
      summary.appendChild(element("span", "tool-name", name || "tool"));
      summary.appendChild(element("span", "tool-state", "running"));
      card.appendChild(summary);
      card.appendChild(element("div", "label", "arguments"));
      card.appendChild(element("pre", "args", ""));
      const progress = element("div", "progress");
      progress.hidden = true;
      progress.appendChild(element("progress", null));
      progress.appendChild(element("span", "progress-message", ""));
      card.appendChild(progress);
      card.appendChild(element("div", "label result-label", "result"));
      card.appendChild(element("pre", "result", ""));
      this.tools.set(id, card);
      this.place(event || {}).appendChild(card);
    }
    return card;
  }

  state(card, text, className) {
    const state = card.querySelector(".tool-state");
    state.textContent = text;
    state.className = "tool-state " + (className || "");
  }

  note(text, className) {
    const node = element("div", "note " + (className || ""), text);
    this.box.appendChild(node);
    return node;
  }

  handle(event) {
    switch (event.type) {
      case "TEXT_MESSAGE_START":
        this.text(event);
        break;
      case "TEXT_MESSAGE_CONTENT":
        this.text(event).textContent += event.delta;
        break;
      case "REASONING_MESSAGE_CONTENT": {
        if (!this.reasoning) {
          this.reasoning = element("details", "reasoning");
          this.reasoning.appendChild(element("summary", null, "thinking"));
          this.reasoning.appendChild(element("pre", null, ""));
          this.place(event).appendChild(this.reasoning);
        }
        this.reasoning.querySelector("pre").textContent += event.delta;
        break;
      }
      case "REASONING_END":
        this.reasoning = null;
        break;
      case "TOOL_CALL_START":
        this.tool(event.toolCallId, event.toolCallName, event);
        break;
      case "TOOL_CALL_ARGS":
        this.tool(event.toolCallId).querySelector(".args").textContent += event.delta;
        break;
      case "TOOL_CALL_END": {
        const args = this.tool(event.toolCallId).querySelector(".args");
        args.textContent = pretty(args.textContent);
        break;
      }
      case "TOOL_CALL_RESULT": {
        const card = this.tool(event.toolCallId);
        card.querySelector(".result").textContent = event.content;
        card.querySelector(".progress").hidden = true;
        this.state(card, "done", "ok");
        break;
      }
      case "CUSTOM":
        this.custom(event);
        break;
      case "SUBAGENT_STARTED": {
        const box = element("div", "subagent");
        const path = (event.metadata && event.metadata.path) || event.name || "sub-agent";
        box.appendChild(element("div", "label", "↳ " + path));
        const parent = event.parentToolCallId && this.tools.get(event.parentToolCallId);
        (parent || this.place({ subagentRunId: event.parentSubagentRunId })).appendChild(box);
        this.nested.set(event.subagentRunId, box);
        break;
      }
      case "RUN_FINISHED":
        return this.finished(event);
      case "RUN_ERROR":
        this.note(event.message || "The run failed.", "error");
        return "error";
      default:
        break;
    }
    return null;
  }

  custom(event) {
    const value = event.value || {};
    if (event.name === "tool_progress") {
      const card = this.tool(value.toolCallId, value.name);
      const progress = card.querySelector(".progress");
      progress.hidden = false;
      const bar = progress.querySelector("progress");
      if (typeof value.fraction === "number") {
        bar.max = 1;
        bar.value = value.fraction;
      } else {
        bar.removeAttribute("value");
      }
      progress.querySelector(".progress-message").textContent = value.message || "";
    } else if (event.name === "compaction") {
      this.note(
        "The conversation was compacted (" +
          value.tokensBefore +
          " → " +
          value.tokensAfter +
          " tokens).",
        "quiet",
      );
    }
  }

  finished(event) {
    const outcome = event.outcome;
    if (outcome && outcome.type === "interrupt") {
      this.approvals(outcome.interrupts || []);
      return "interrupt";
    }
    this.boardLink();
    return "done";
  }

  boardLink() {
    const board = body.dataset.board;
    if (!board || !this.message) {
      return;
    }
    const link = element("a", "board-link", "See this run on the board");
    link.href = board.replace(/\/+$/, "") + "/runs?q=" + encodeURIComponent(this.message);
    link.target = "_blank";
    link.rel = "noopener noreferrer";
    const line = element("div", "note quiet");
    line.appendChild(link);
    this.box.appendChild(line);
  }

  approvals(interrupts) {
    const answers = new Map();
    const box = element("div", "approvals");
    for (const interrupt of interrupts) {
      const meta = interrupt.metadata || {};
      const item = element("div", "approval");
      item.dataset.interruptId = interrupt.id;
      item.appendChild(
        element("div", "question", interrupt.message || "A tool call needs your approval."),
      );
      item.appendChild(element("div", "label", meta.toolName || "tool"));
      item.appendChild(element("pre", "args", JSON.stringify(meta.arguments || {}, null, 2)));
      const actions = element("div", "actions");
      const approve = element("button", "approve", "Approve");
      const deny = element("button", "deny", "Deny");
      approve.type = "button";
      deny.type = "button";
      const decide = (approved) => {
        approve.disabled = true;
        deny.disabled = true;
        item.classList.add(approved ? "approved" : "denied");
        item.appendChild(element("div", "decision", approved ? "approved" : "denied"));
        answers.set(interrupt.id, approved);
        if (answers.size === interrupts.length) {
          const resume = interrupts.map((each) => ({
            interruptId: each.id,
            status: "resolved",
            payload: { approved: answers.get(each.id) },
          }));
          run({ messages: [], resume: resume }, this.message);
        }
      };
      approve.addEventListener("click", () => decide(true));
      deny.addEventListener("click", () => decide(false));
      actions.appendChild(approve);
      actions.appendChild(deny);
      item.appendChild(actions);
      box.appendChild(item);
      const card = interrupt.toolCallId && this.tools.get(interrupt.toolCallId);
      if (card) {
        this.state(card, "waiting for approval", "waiting");
      }
    }
    this.box.appendChild(box);
  }
}

// The events of a server-sent event stream, as they arrive.
async function* events(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
    buffer = buffer.replace(/\r\n/g, "\n");
    let end = buffer.indexOf("\n\n");
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, ""))
        .join("\n");
      if (data) {
        yield JSON.parse(data);
      }
      end = buffer.indexOf("\n\n");
    }
    if (done) {
      return;
    }
  }
}

function busy(on) {
  send.disabled = on;
  body.classList.toggle("busy", on);
}

async function run(request, message) {
  const view = new RunView(message);
  busy(true);
  const headers = { "Content-Type": "application/json", Accept: "text/event-stream" };
  if (token()) {
    headers.Authorization = "Bearer " + token();
  }
  const payload = {
    threadId: thread(),
    runId: newId(),
    state: {},
    tools: [],
    context: [],
    forwardedProps: {},
    ...request,
  };
  let ended = null;
  try {
    const response = await fetch("/ag-ui", {
      method: "POST",
      headers: headers,
      body: JSON.stringify(payload),
      credentials: "omit",
    });
    if (!response.ok) {
      let text = "The server answered " + response.status + ".";
      try {
        const error = await response.json();
        text = error.message || text;
      } catch (_error) {
        // not JSON: keep the status
      }
      if (response.status === 401) {
        window.sessionStorage.removeItem(TOKEN_KEY);
        tokenForm.hidden = false;
      }
      view.note(text, "error");
      return;
    }
    for await (const event of events(response)) {
      ended = view.handle(event) || ended;
      scrolled();
    }
    if (!ended) {
      view.note("The answer was cut off: the stream ended before the run did.", "error");
    }
  } catch (error) {
    view.note("Could not reach the server: " + error, "error");
  } finally {
    busy(false);
    scrolled();
  }
}

ask.addEventListener("submit", (event) => {
  event.preventDefault();
  const text = input.value.trim();
  if (!text || send.disabled) {
    return;
  }
  if (needsToken()) {
    tokenForm.hidden = false;
    tokenInput.focus();
    return;
  }
  input.value = "";
  log.appendChild(element("div", "bubble user", text));
  run({ messages: [{ id: newId(), role: "user", content: text }] }, text);
});

input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    ask.requestSubmit();
  }
});

tokenForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const given = tokenInput.value.trim();
  if (given) {
    window.sessionStorage.setItem(TOKEN_KEY, given);
    tokenInput.value = "";
    tokenForm.hidden = true;
    input.focus();
  }
});

document.getElementById("new-conversation").addEventListener("click", () => {
  window.sessionStorage.removeItem(THREAD_KEY);
  toolCards.clear();
  log.textContent = "";
  input.focus();
});

tokenForm.hidden = !needsToken();
input.focus();
