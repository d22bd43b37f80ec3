export const value = 'v';
export default 'dd';
