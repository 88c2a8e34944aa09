// The fitness checks users register with fitnessCheck(), kept in registration order.
import { ArgumentError, NameTakenError } from "../../flash-error.js";

/** A user's check, sync or async: throw (or reject) to fail; a string it returns is shown beside its result. */
export type FitnessCheckFn = () => unknown;

export interface FitnessCheck {
  name: string;
  run: FitnessCheckFn;
}

// On globalThis, so checks a user's own copy of the package registers reach the runtime running it.
const KEY = Symbol.for("flash-worker.fitness-checks");
const holder = globalThis as { [KEY]?: FitnessCheck[] };

export function registeredChecks(): FitnessCheck[] {
  holder[KEY] ??= [];
  return holder[KEY];
}

/** Registers a startup check that must pass before the worker takes its first job. */
export function registerFitnessCheck(name: string, fn: FitnessCheckFn): void {
  if (typeof name !== "string" || name.trim().length === 0)
    throw new ArgumentError("fitnessCheck(name, fn): name must be a non-empty string");
  if (typeof fn !== "function") throw new ArgumentError(`fitnessCheck("${name}", fn): fn must be a function`);
  const checks = registeredChecks();
  if (checks.some((check) => check.name === name))
    throw new NameTakenError(`fitnessCheck("${name}") is already registered`);
  checks.push({ name, run: fn });
}
