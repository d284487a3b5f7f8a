import { appendFileSync } from 'node:fs';
import { afterAll, beforeAll, expect } from 'vitest';

// note: CI (.ci/run) sets PE_TEST_TRACE to a file: each test file's start and end are written
// there with the worker's pid, so that when a worker process dies (Vitest says only "Worker exited
// unexpectedly") .ci/run can name the file it was running. Unset, this does nothing.
const trace = process.env.PE_TEST_TRACE;
if (trace) {
  const line = (what: string): void => appendFileSync(trace, `${process.pid} ${what} ${expect.getState().testPath ?? '?'}\n`);
  beforeAll(() => line('start'));
  afterAll(() => line('end'));
}
