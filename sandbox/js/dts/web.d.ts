// Declarations of the web-platform globals of the scripthost JavaScript sandbox: the
// WinterCG common minimum a handler can use (URL, TextEncoder, atob, structuredClone,
// crypto, timers, Intl). Use them with `"lib": ["es2022"]` and without the "dom" lib,
// whose declarations of the same names would clash.

type BufferSource = ArrayBuffer | ArrayBufferView;

// ---- DOMException ----
interface DOMException extends Error {
  readonly name: string;
  readonly message: string;
  /** The legacy numeric code (5 InvalidCharacterError, 22 QuotaExceededError, 25 DataCloneError, ...). */
  readonly code: number;
}
declare var DOMException: {
  prototype: DOMException;
  new (message?: string, name?: string): DOMException;
};

// ---- base64 ----
/** Encodes a string of Latin-1 characters as base64; throws InvalidCharacterError otherwise. */
declare function btoa(data: string): string;
/** Decodes base64 (whitespace ignored, padding optional) to a string of byte values. */
declare function atob(data: string): string;

// ---- Encoding ----
interface TextEncoderEncodeIntoResult {
  read: number;
  written: number;
}
interface TextEncoder {
  readonly encoding: "utf-8";
  /** UTF-8 bytes of input; lone surrogates become U+FFFD. */
  encode(input?: string): Uint8Array;
  encodeInto(source: string, destination: Uint8Array): TextEncoderEncodeIntoResult;
}
declare var TextEncoder: {
  prototype: TextEncoder;
  new (): TextEncoder;
};
interface TextDecoderOptions {
  /** Throw a TypeError on malformed input instead of inserting U+FFFD. */
  fatal?: boolean;
  /** Keep a leading byte order mark. */
  ignoreBOM?: boolean;
}
interface TextDecodeOptions {
  /** More input follows: keep an incomplete sequence at the end for the next call. */
  stream?: boolean;
}
interface TextDecoder {
  readonly encoding: string;
  readonly fatal: boolean;
  readonly ignoreBOM: boolean;
  decode(input?: BufferSource, options?: TextDecodeOptions): string;
}
declare var TextDecoder: {
  prototype: TextDecoder;
  /** label: any WHATWG Encoding label ("utf-8", "utf-16le", "windows-1252", "shift_jis", ...). */
  new (label?: string, options?: TextDecoderOptions): TextDecoder;
};

// ---- URL ----
interface URL {
  hash: string;
  host: string;
  hostname: string;
  href: string;
  readonly origin: string;
  password: string;
  pathname: string;
  port: string;
  protocol: string;
  search: string;
  readonly searchParams: URLSearchParams;
  username: string;
  toString(): string;
  toJSON(): string;
}
declare var URL: {
  prototype: URL;
  /** Parses url (against base when given) per the WHATWG URL Standard; throws a TypeError when it is not a URL. */
  new (url: string | URL, base?: string | URL): URL;
  canParse(url: string | URL, base?: string | URL): boolean;
  parse(url: string | URL, base?: string | URL): URL | null;
};
interface URLSearchParams {
  readonly size: number;
  append(name: string, value: string): void;
  delete(name: string, value?: string): void;
  get(name: string): string | null;
  getAll(name: string): string[];
  has(name: string, value?: string): boolean;
  set(name: string, value: string): void;
  sort(): void;
  forEach(callbackfn: (value: string, key: string, parent: URLSearchParams) => void, thisArg?: any): void;
  entries(): IterableIterator<[string, string]>;
  keys(): IterableIterator<string>;
  values(): IterableIterator<string>;
  [Symbol.iterator](): IterableIterator<[string, string]>;
  /** application/x-www-form-urlencoded serialization. */
  toString(): string;
}
declare var URLSearchParams: {
  prototype: URLSearchParams;
  new (init?: string[][] | Record<string, string> | string | URLSearchParams | Iterable<[string, string]>): URLSearchParams;
};

// ---- structuredClone ----
interface StructuredSerializeOptions {
  /** Not supported: a non-empty list throws a DataCloneError. */
  transfer?: any[];
}
/**
 * Deep-copies plain data, arrays, Date, RegExp, Map, Set, ArrayBuffer, typed arrays,
 * DataView, errors and primitive wrappers, keeping cycles and shared references.
 * Functions, symbols, promises and class-specific objects throw a DataCloneError.
 */
declare function structuredClone<T = any>(value: T, options?: StructuredSerializeOptions): T;

// ---- Web Crypto ----
type AlgorithmIdentifier = string | { name: string };
type HashAlgorithmIdentifier = "SHA-1" | "SHA-256" | "SHA-384" | "SHA-512" | { name: "SHA-1" | "SHA-256" | "SHA-384" | "SHA-512" };
type KeyUsage = "sign" | "verify";
interface HmacImportParams {
  name: "HMAC";
  hash: HashAlgorithmIdentifier;
  /** Key length in bits; defaults to the key data's length. */
  length?: number;
}
interface HmacKeyAlgorithm {
  name: "HMAC";
  hash: { name: string };
  length: number;
}
interface JsonWebKey {
  kty?: string;
  k?: string;
  alg?: string;
  key_ops?: string[];
  ext?: boolean;
}
interface CryptoKey {
  readonly type: "secret";
  readonly extractable: boolean;
  readonly algorithm: HmacKeyAlgorithm;
  readonly usages: KeyUsage[];
}
declare var CryptoKey: {
  prototype: CryptoKey;
};
interface SubtleCrypto {
  digest(algorithm: HashAlgorithmIdentifier, data: BufferSource): Promise<ArrayBuffer>;
  importKey(format: "raw", keyData: BufferSource, algorithm: HmacImportParams, extractable: boolean, keyUsages: KeyUsage[]): Promise<CryptoKey>;
  importKey(format: "jwk", keyData: JsonWebKey, algorithm: HmacImportParams, extractable: boolean, keyUsages: KeyUsage[]): Promise<CryptoKey>;
  exportKey(format: "raw", key: CryptoKey): Promise<ArrayBuffer>;
  exportKey(format: "jwk", key: CryptoKey): Promise<JsonWebKey>;
  sign(algorithm: "HMAC" | { name: "HMAC" }, key: CryptoKey, data: BufferSource): Promise<ArrayBuffer>;
  verify(algorithm: "HMAC" | { name: "HMAC" }, key: CryptoKey, signature: BufferSource, data: BufferSource): Promise<boolean>;
}
interface Crypto {
  readonly subtle: SubtleCrypto;
  /** Fills an integer typed array of at most 65,536 bytes (QuotaExceededError beyond). Seeded in fixtures. */
  getRandomValues<T extends Int8Array | Uint8Array | Uint8ClampedArray | Int16Array | Uint16Array | Int32Array | Uint32Array | BigInt64Array | BigUint64Array>(array: T): T;
  /** A random version 4 UUID. Seeded in fixtures. */
  randomUUID(): `${string}-${string}-${string}-${string}-${string}`;
}
declare var crypto: Crypto;

// ---- timers ----
/**
 * Runs handler after timeout milliseconds, inside the current invocation only: timers
 * still pending when the handler settles are cancelled, waiting counts against the
 * invocation's timeout, and in fixtures timers run on the virtual clock (at once).
 */
declare function setTimeout<A extends any[]>(handler: (...args: A) => void, timeout?: number, ...args: A): number;
declare function setInterval<A extends any[]>(handler: (...args: A) => void, timeout?: number, ...args: A): number;
declare function clearTimeout(id: number | undefined): void;
declare function clearInterval(id: number | undefined): void;
declare function queueMicrotask(callback: () => void): void;
interface Performance {
  /** Milliseconds since the invocation started (virtual in fixtures). */
  now(): number;
  readonly timeOrigin: number;
}
declare var performance: Performance;

// ---- Intl ----
// Intl.NumberFormat, Intl.DateTimeFormat, Intl.getCanonicalLocales and toLocaleString
// are declared by TypeScript's own ES library ("lib": ["es2022"]). The sandbox supports
// the decimal, percent and currency styles with fraction and integer digit options and
// grouping; dateStyle, timeStyle and the weekday, year, month, day, hour, minute, second
// and timeZoneName components with any IANA timeZone; locales en (US, GB, CA, AU, IN),
// de, fr, es, it, pt (and pt-BR), nl, sv, pl, ru, tr, ja, zh and ko. Other options throw
// a RangeError; other locales fall back to en-US.
