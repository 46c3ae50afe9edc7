package io.pgjobs;

import java.util.Objects;
import java.util.UUID;

/**
 * An edge of a {@link JobGraph}: the job being added waits for a parent, either another job of the same
 * graph (by its name there) or a job already enqueued (by id), and runs when every parent has ended.
 *
 * <pre>{@code
 * Dependency.on("fetch")                        // a job of this graph; cancelled if it fails
 * Dependency.on("fetch").runAnyway()            // runs after it whatever its outcome
 * Dependency.on("fetch").onlyIfItFails()        // runs only if it fails (an "any failed" callback)
 * Dependency.onJob(existingId)                  // a job enqueued before
 * }</pre>
 *
 * @param node the parent's name in the graph, or null for {@code job}
 * @param job the parent's id (a job enqueued before), or null for {@code node}
 * @param onFailure what the child does if this parent ends failed or cancelled
 */
public record Dependency(String node, UUID job, OnFailure onFailure) {

  /** What a child does when a parent ends without success (failed, discarded or cancelled). */
  public enum OnFailure {
    /**
     * The child is cancelled (the default), and so are the jobs that wait on it with {@code CANCEL}: a
     * failed step stops what was built on it.
     */
    CANCEL,
    /** The child counts the parent as ended and runs when its other parents allow. */
    RUN,
    /**
     * The child runs only if a parent fails or is cancelled, at once, whatever its other parents do; if
     * every parent succeeds it is cancelled as not needed. For "when any of these failed" callbacks. A job
     * with such a dependency has only such dependencies.
     */
    ONLY;

    /** The name stored and shown: {@code cancel}, {@code run} or {@code only}. */
    public String value() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /** Checks that exactly one of node and job is given. */
  public Dependency {
    Objects.requireNonNull(onFailure, "onFailure");
    if ((node == null) == (job == null)) {
      throw new InvalidJobException(
          "dependency", "names a job of the graph or an enqueued job's id, not both or neither");
    }
  }

  /** Waits for the job named {@code node} in the same graph; cancelled if that job does not succeed. */
  public static Dependency on(String node) {
    if (node == null) {
      throw new InvalidJobException("dependency", "the name of a job of the graph is required");
    }
    return new Dependency(node, null, OnFailure.CANCEL);
  }

  /** Waits for a job enqueued before (running, waiting or already finished); cancelled if it does not succeed. */
  public static Dependency onJob(UUID job) {
    if (job == null) {
      throw new InvalidJobException("dependency", "the id of an enqueued job is required");
    }
    return new Dependency(null, job, OnFailure.CANCEL);
  }

  /** This dependency, but the child runs even if the parent fails or is cancelled. */
  public Dependency runAnyway() {
    return new Dependency(node, job, OnFailure.RUN);
  }

  /**
   * This dependency, but the child runs only if the parent fails or is cancelled (as soon as one of its
   * parents does), and is cancelled as not needed if they all succeed: a "when any failed" callback.
   */
  public Dependency onlyIfItFails() {
    return new Dependency(node, job, OnFailure.ONLY);
  }
}
