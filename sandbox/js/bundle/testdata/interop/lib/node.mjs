import d, { named } from 'esmodule';
export const nodeDefault = typeof d === 'object' ? 'module.exports' : d;
export const nodeNamed = named;
