package io.pgjobs.store;

import java.util.AbstractList;
import java.util.function.IntFunction;
import java.util.function.UnaryOperator;

/**
 * A bulk enqueue's jobs, each made when it is first read: the COPY of {@link EnqueueStore#insertAll(java.util.List)}
 * reads them in order, so a job's payload is encoded and checked, and its id drawn, while the server is
 * still storing the rows sent before it, instead of all of them before the first row goes out. W1 (100,000
 * jobs) spent about a quarter of its time making the jobs before the COPY began (issue 31 §2).
 *
 * <p>Every job of the batch has the same options, so whether all are due now is known without making
 * them ({@link #dueNow()}). A job that cannot be made (a payload refused) throws from {@link #get}, in the
 * middle of the COPY: the COPY is cancelled and its transaction rolled back, so nothing is stored, as
 * when the jobs were all made first. Use it only where the enqueue has a transaction of its own: the
 * caller's transaction would be left aborted.
 *
 * <p>Each job is made once and kept (later reads, such as the ids returned, see the same job), or, made
 * by {@link #readOnce}, not kept: a graph's jobs, whose COPY reads each once and whose caller takes what it
 * needs of each (its id) as it is made; a million of them would otherwise stay in memory until the end of
 * the enqueue. Not thread-safe: one enqueue reads it.
 */
public final class StreamedJobs extends AbstractList<NewJob> {
  private final NewJob[] made;
  private final int size;
  private final IntFunction<NewJob> make;
  private final boolean dueNow;

  /**
   * {@code size} jobs, job {@code i} made by {@code make.apply(i)} at its first read; {@code dueNow}: every
   * job is due now (no run time, no delay).
   */
  public StreamedJobs(int size, IntFunction<NewJob> make, boolean dueNow) {
    this(size, make, dueNow, true);
  }

  private StreamedJobs(int size, IntFunction<NewJob> make, boolean dueNow, boolean keep) {
    this.made = keep ? new NewJob[size] : null;
    this.size = size;
    this.make = make;
    this.dueNow = dueNow;
  }

  /**
   * {@code size} jobs made at each read and not kept: each must be read once, in order (a second read
   * makes the job again). For a COPY that reads each row once ({@link EnqueueStore#insertGraph}).
   */
  public static StreamedJobs readOnce(int size, IntFunction<NewJob> make, boolean dueNow) {
    return new StreamedJobs(size, make, dueNow, false);
  }

  @Override
  public NewJob get(int index) {
    NewJob job = made == null ? null : made[index];
    if (job == null) {
      job = make.apply(index);
      if (job == null) {
        throw new IllegalStateException("no job made at position " + index);
      }
      if (made != null) {
        made[index] = job;
      }
    }
    return job;
  }

  @Override
  public int size() {
    return size;
  }

  /** Whether every job is due now: the COPY then leaves the run time to the column's default. */
  public boolean dueNow() {
    return dueNow;
  }

  /**
   * These jobs, each changed by {@code change} when it is read (its options stay the batch's: the change
   * must not give it a run time).
   */
  public StreamedJobs map(UnaryOperator<NewJob> change) {
    return new StreamedJobs(size, i -> change.apply(get(i)), dueNow, made != null);
  }
}
