const u = new URL('/x?a=1', 'https://h');
u.searchParams.append('b', '2');
const bytes: Uint8Array = new TextEncoder().encode(u.href);
const text: string = new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: false });
const b64: string = btoa(text) + atob('aGk=');
const c = structuredClone({ d: new Date(), m: new Map<string, number>() });
const id: string = crypto.randomUUID();
crypto.getRandomValues(new Uint32Array(4));
async function sign(body: string): Promise<boolean> {
  const key = await crypto.subtle.importKey('raw', new TextEncoder().encode('k'), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
  const sig = await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(body));
  await crypto.subtle.digest('SHA-256', sig);
  return crypto.subtle.verify('HMAC', key, sig, new TextEncoder().encode(body));
}
const t = setTimeout((a: string) => a.length, 10, 'x'); clearTimeout(t);
const iv = setInterval(() => {}, 5); clearInterval(iv);
queueMicrotask(() => {});
const n: number = performance.now();
const s: string = new Intl.NumberFormat('de', { style: 'currency', currency: 'EUR' }).format(1) + (1).toLocaleString('en-US') + new Intl.DateTimeFormat('en', { dateStyle: 'full', timeZone: 'UTC' }).format(new Date());
try { atob('!') } catch (e) { if (e instanceof DOMException) void [e.code, e.name] }
export { c, id, n, s, b64, sign };
