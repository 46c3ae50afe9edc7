package io.pgjobs.worker;

/** Why the runtime interrupted a running handler. */
enum StopReason {
  /** The attempt ran past its timeout: a failed attempt. */
  TIMEOUT,
  /** The worker is shutting down and the grace period is over: the job goes back to the queue. */
  SHUTDOWN,
  /** Someone cancelled the job. */
  CANCEL,
  /**
   * The worker has not been able to heartbeat for nearly the dead-worker threshold: it is about to be
   * presumed dead and its jobs rescued, so it stops its handlers rather than run beside their next
   * attempt. The job goes back to the queue (if rescue has not already taken it).
   */
  LOST,
  /**
   * The job is no longer this worker's claim: the heartbeat found it rescued, or claimed again, while the
   * worker was silent for longer than the dead-worker threshold without noticing (a paused process, a
   * frozen VM). Its handler is stopped rather than run beside the job's next run; whatever it writes is
   * fenced off by the claim token.
   */
  CLAIM_LOST
}
