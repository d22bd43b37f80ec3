const m = require('./esm.js');
module.exports = { default: { value: m.value, keys: Object.keys(m), esModule: m.__esModule, def: m.default } };
