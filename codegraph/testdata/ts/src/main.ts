import { Circle, total, unit } from "./shapes";

const all = [new Circle(unit)];
console.log(total(all));
