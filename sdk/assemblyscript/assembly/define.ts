// The workflow definition: the same JSON a JS workflow's default export has, with
// export names in place of functions.

import { JSONValue } from "./json";

/** A handler's error policy: strategy "fail" (the default), "retry" or "pause". */
export class OnError {
  maxRetries: i32 = 0;
  backoff: string = "";
  delayMs: i32 = 0;
  constructor(public strategy: string) {}
  static retry(maxRetries: i32): OnError {
    const o = new OnError("retry");
    o.maxRetries = maxRetries;
    return o;
  }
  static pause(): OnError {
    return new OnError("pause");
  }
  withBackoff(backoff: string, delayMs: i32): OnError {
    this.backoff = backoff;
    this.delayMs = delayMs;
    return this;
  }
  toJSON(): JSONValue {
    const v = JSONValue.object().setString("strategy", this.strategy);
    if (this.maxRetries != 0) v.setNumber("maxRetries", <f64>this.maxRetries);
    if (this.backoff != "") v.setString("backoff", this.backoff);
    if (this.delayMs != 0) v.setNumber("delayMs", <f64>this.delayMs);
    return v;
  }
}

/** Export-name fields shared by producers and consumers: hooks and the error policy. */
class Handler {
  fields: JSONValue = JSONValue.object();
  protected setField(key: string, value: string): void {
    this.fields.setString(key, value);
  }
}

/** A producer runs on a schedule and may publish; handler is its export name. */
export class Producer extends Handler {
  constructor(handler: string) {
    super();
    this.fields.setString("handler", handler);
  }
  every(every: string): Producer {
    this.fields.set("schedule", JSONValue.object().setString("every", every));
    return this;
  }
  cron(cron: string): Producer {
    this.fields.set("schedule", JSONValue.object().setString("cron", cron));
    return this;
  }
  publishes(topics: string[]): Producer {
    this.fields.set("publishes", JSONValue.strings(topics));
    return this;
  }
  guard(name: string): Producer {
    this.setField("guard", name);
    return this;
  }
  before(name: string): Producer {
    this.setField("before", name);
    return this;
  }
  after(name: string): Producer {
    this.setField("after", name);
    return this;
  }
  onError(policy: OnError): Producer {
    this.fields.set("onError", policy.toJSON());
    return this;
  }
}

/** A consumer of topics in three phases; prepare, mutate and next are export names. */
export class Consumer extends Handler {
  constructor(subscribe: string[], prepare: string) {
    super();
    this.fields.set("subscribe", JSONValue.strings(subscribe));
    this.fields.setString("prepare", prepare);
  }
  publishes(topics: string[]): Consumer {
    this.fields.set("publishes", JSONValue.strings(topics));
    return this;
  }
  mutate(name: string): Consumer {
    this.setField("mutate", name);
    return this;
  }
  next(name: string): Consumer {
    this.setField("next", name);
    return this;
  }
  guard(name: string): Consumer {
    this.setField("guard", name);
    return this;
  }
  before(name: string): Consumer {
    this.setField("before", name);
    return this;
  }
  after(name: string): Consumer {
    this.setField("after", name);
    return this;
  }
  onError(policy: OnError): Consumer {
    this.fields.set("onError", policy.toJSON());
    return this;
  }
}

/** The definition a module declares with define(). */
export class Workflow {
  private topicList: string[] = [];
  private producers: JSONValue = JSONValue.object();
  private consumers: JSONValue = JSONValue.object();

  topics(topics: string[]): Workflow {
    this.topicList = topics;
    return this;
  }
  producer(name: string, p: Producer): Workflow {
    this.producers.set(name, p.fields);
    return this;
  }
  consumer(name: string, c: Consumer): Workflow {
    this.consumers.set(name, c.fields);
    return this;
  }
  toJSON(): JSONValue {
    const v = JSONValue.object();
    if (this.topicList.length > 0) v.set("topics", JSONValue.strings(this.topicList));
    if (this.producers.length > 0) v.set("producers", this.producers);
    if (this.consumers.length > 0) v.set("consumers", this.consumers);
    return v;
  }
}
