// The one websocket of this tab: topic subscriptions, auto-reconnect with
// exponential backoff and jitter, and resumption from the last event id, so
// that a server restart or a dropped connection loses no event the server
// still has (and says "gap" for those it has not).

/** Connection states, shown by the status indicator. */
export const State = { connecting: "connecting", open: "open", reconnecting: "reconnecting", closed: "closed" };

export class Socket {
  constructor(url = Socket.defaultURL()) {
    this.url = url;
    this.ws = null;
    this.state = State.closed;
    this.serverID = "";
    this.lastEventID = 0; // the id of the last event processed
    this.topics = new Map(); // topic -> Set of handlers
    this.stateListeners = new Set();
    this.gapListeners = new Set();
    this.attempt = 0;
    this.retryAt = 0;
    this.timer = null;
    this.stopped = true;
    this.pingTimer = null;
    this.acks = new Map(); // topic -> resolvers waiting for "subscribed"
  }

  static defaultURL() {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    return `${proto}//${location.host}/ws`;
  }

  /** start opens the connection (and keeps reopening it until stop). */
  start() {
    if (!this.stopped) return;
    this.stopped = false;
    this.connect();
  }

  /** stop closes the connection for good (logout). */
  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.pingTimer);
    if (this.ws) this.ws.close(1000, "logout");
    this.setState(State.closed);
  }

  /** reconnectNow skips the rest of the backoff wait. */
  reconnectNow() {
    if (this.stopped || this.state === State.open || this.state === State.connecting) return;
    clearTimeout(this.timer);
    this.connect();
  }

  onState(fn) { this.stateListeners.add(fn); fn(this.state, this); return () => this.stateListeners.delete(fn); }

  /** onGap(fn) is called with (topic, message) when events were lost. */
  onGap(fn) { this.gapListeners.add(fn); return () => this.gapListeners.delete(fn); }

  setState(s) {
    this.state = s;
    for (const fn of this.stateListeners) fn(s, this);
  }

  /**
   * subscribe(topic, handler) delivers each event payload of topic to
   * handler(event, envelope) and returns the function that unsubscribes.
   */
  subscribe(topic, handler) {
    let set = this.topics.get(topic);
    let ready;
    if (!set) {
      set = new Set();
      this.topics.set(topic, set);
      ready = new Promise((resolve) => {
        const waiters = this.acks.get(topic) || [];
        waiters.push(resolve);
        this.acks.set(topic, waiters);
      });
      // A new topic starts live: no replay of what came before.
      this.send({ type: "subscribe", topics: [topic] });
    } else {
      ready = Promise.resolve();
    }
    set.add(handler);
    const off = () => {
      const s = this.topics.get(topic);
      if (!s) return;
      s.delete(handler);
      if (s.size === 0) {
        this.topics.delete(topic);
        this.send({ type: "unsubscribe", topics: [topic] });
      }
    };
    // ready resolves when the server confirmed the subscription, or after
    // 3 s (a closed socket subscribes again on reconnect).
    off.ready = Promise.race([ready, new Promise((r) => setTimeout(r, 3000))]);
    return off;
  }

  /** send writes one JSON message if the socket is open; it reports whether it did. */
  send(msg) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) {
      this.ws.send(JSON.stringify(msg));
      return true;
    }
    return false;
  }

  connect() {
    this.setState(this.attempt === 0 ? State.connecting : State.reconnecting);
    let ws;
    try {
      ws = new WebSocket(this.url);
    } catch {
      this.scheduleReconnect();
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      this.attempt = 0;
      this.setState(State.open);
      if (this.topics.size > 0) {
        const msg = { type: "subscribe", topics: [...this.topics.keys()] };
        if (this.lastEventID > 0) msg.last_event_id = this.lastEventID;
        ws.send(JSON.stringify(msg));
      }
      clearInterval(this.pingTimer);
      this.pingTimer = setInterval(() => this.send({ type: "ping" }), 20000);
    };
    ws.onmessage = (e) => this.dispatch(e.data);
    ws.onclose = () => {
      clearInterval(this.pingTimer);
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.stopped) { this.setState(State.closed); return; }
      this.scheduleReconnect();
    };
    ws.onerror = () => { /* onclose follows and reconnects */ };
  }

  scheduleReconnect() {
    // 0.5 s, 1 s, 2 s, … up to 15 s, each with ±25 % jitter.
    const base = Math.min(15000, 500 * 2 ** this.attempt);
    const delay = Math.round(base * (0.75 + Math.random() * 0.5));
    this.attempt++;
    this.retryAt = Date.now() + delay;
    this.setState(State.reconnecting);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), delay);
    for (const fn of this.reconnectHooks || []) fn(this.attempt);
  }

  /** onReconnectScheduled(fn) is told each failed attempt (to check the login). */
  onReconnectScheduled(fn) { (this.reconnectHooks ||= new Set()).add(fn); }

  dispatch(data) {
    let msg;
    try { msg = JSON.parse(data); } catch { return; }
    switch (msg.type) {
      case "hello": {
        const restarted = this.serverID && this.serverID !== msg.server_id;
        this.serverID = msg.server_id;
        if (!this.lastEventID) this.lastEventID = msg.last_event_id || 0;
        if (restarted) for (const fn of this.gapListeners) fn("*", "the server restarted");
        break;
      }
      case "event": {
        if (typeof msg.id === "number") {
          if (msg.id <= this.lastEventID && this.seen(msg.topic, msg.id)) return;
          this.lastEventID = Math.max(this.lastEventID, msg.id);
        }
        const set = this.topics.get(msg.topic);
        if (set) for (const fn of [...set]) {
          try { fn(msg.event, msg); } catch (err) { console.error("event handler", err); }
        }
        break;
      }
      case "subscribed":
        for (const t of msg.topics || []) {
          for (const r of this.acks.get(t) || []) r();
          this.acks.delete(t);
        }
        break;
      case "gap":
        for (const fn of this.gapListeners) fn(msg.topic, msg.message);
        break;
      case "error":
        console.warn("websocket error message", msg.code, msg.message);
        for (const fn of this.errorHooks || []) fn(msg);
        break;
      default:
        break;
    }
  }

  onError(fn) { (this.errorHooks ||= new Set()).add(fn); }

  // seen reports whether an event id was already delivered on topic. Ids are
  // one increasing sequence, so a replayed id at or below the last one is a
  // duplicate, except for a topic whose replay we asked for after a gap.
  seen(_topic, id) { return id <= this.lastEventID; }
}
