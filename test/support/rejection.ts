/** The error a client call rejects with (an SDK's APIError, a fetch failure); fails the test if it resolves. */
export async function failureOf(call: () => Promise<unknown>): Promise<Record<string, unknown>> {
  try {
    await call();
  } catch (error) {
    return error as Record<string, unknown>;
  }
  throw new Error("the call did not fail");
}
