package io.pgjobs.worker;

/** Why the runtime interrupted a running handler. */
enum StopReason {
  /** The attempt ran past its timeout: a failed attempt. */
  TIMEOUT,
  /** The worker is shutting down and the grace period is over: the job goes back to the queue. */
  SHUTDOWN,
  /** Someone cancelled the job. */
  CANCEL
}
