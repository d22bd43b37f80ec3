// want: ok ["2-4-6-4",3,true,true,true,true,[1,2,3],"a,b",4,"xxx"]
// The guards must not change what ordinary code sees.
export default { consumers: { c: { h() {
  const u = new Uint8Array([1, 2, 3])
  return [[1, 2, 3].map((x) => x * 2).concat([4]).join('-'), Array(3).length, Array.isArray([]), [] instanceof Array,
    u instanceof Uint8Array, new Date(0) instanceof Date, [...u], ['a', 'b'].toString(), Array.from('abcd').length, 'x'.repeat(3)]
} } } }
