// Every way an ES module reaches a CommonJS module, and a CommonJS module an ES
// module, reported as JSON: Build's interop helpers must give what esbuild's give.
import def, { a, counter, bump } from 'plain';
import * as ns from 'plain';
import fn from 'fn';
import * as fnns from 'fn';
import esm, { named as esmNamed } from 'esmodule';
import * as esmns from 'esmodule';
import chain from 'chain';
import prim from 'prim';
import * as primns from 'prim';
import nullish from 'nullmod';
import * as nullns from 'nullmod';
import * as protons from 'proto';
import * as re from './lib/reexport.js';
import cjsuser from './lib/cjsuser.cjs';
import { nodeDefault, nodeNamed } from './lib/node.mjs';
import { boom } from 'thrower';

function protoName(p) {
  if (p === null) return 'null';
  if (p === Object.prototype) return 'Object';
  if (p === Function.prototype) return 'Function';
  if (p === String.prototype) return 'String';
  return 'other:' + (p.constructor && p.constructor.name);
}

function describe(o) {
  if (o === null || (typeof o !== 'object' && typeof o !== 'function')) return { value: o === undefined ? 'undefined' : o };
  const props = {};
  for (const n of Object.getOwnPropertyNames(o)) {
    const d = Object.getOwnPropertyDescriptor(o, n);
    const v = o[n];
    props[n] = {
      get: typeof d.get, getName: d.get ? d.get.name : null, set: typeof d.set,
      enumerable: d.enumerable, configurable: d.configurable, writable: d.writable === undefined ? 'none' : d.writable,
      value: typeof v === 'function' ? 'fn:' + v.name : typeof v === 'object' && v !== null ? 'object' : v,
    };
  }
  const forIn = [];
  for (const k in o) forIn.push(k);
  return { type: typeof o, names: Object.getOwnPropertyNames(o), keys: Object.keys(o), forIn, props,
    extensible: Object.isExtensible(o), proto: protoName(Object.getPrototypeOf(o)) };
}

function report() {
  const counterBefore = counter;
  const bumped = bump();
  return {
    def: describe(def), a, counterBefore, bumped, counterAfter: counter, nsCounter: ns.counter, ns: describe(ns),
    nsDefaultIsDef: ns.default === def, writeRefused: !Reflect.set(ns, 'a', 5), nsA: ns.a, json: JSON.stringify(ns),
    fn: fn(2), fnns: describe(fnns), fnnsDefaultIsFn: fnns.default === fn,
    esm, esmNamed, esmns: describe(esmns),
    chain: describe(chain), chainUpper: chain.upper('x'),
    prim, primns: describe(primns), nullish, nullns: describe(nullns),
    protons: describe(protons), protoInherited: protons.inherited,
    re: describe(re), reA: re.a, reOwn: re.own, cjsuser, nodeDefault, nodeNamed,
  };
}

export default {
  f: { report, boom: () => boom() },
};
