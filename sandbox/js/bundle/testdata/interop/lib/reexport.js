export * from 'plain';
export const own = 'o';
