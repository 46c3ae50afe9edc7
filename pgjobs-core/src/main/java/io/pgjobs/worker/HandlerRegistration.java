package io.pgjobs.worker;

import io.pgjobs.JobHandler;
import io.pgjobs.JobType;

/** A job type with the handler that runs it. */
record HandlerRegistration<P>(JobType<P> type, JobHandler<? super P> handler) {}
