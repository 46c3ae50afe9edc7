package io.pgjobs;

import java.util.List;

/**
 * One page of {@link JobClient#list}, newest first.
 *
 * @param jobs the jobs of this page
 * @param nextCursor pass to {@link JobFilter.Builder#cursor} for the next page; null on the last page
 */
public record JobPage(List<Job> jobs, String nextCursor) {
  /**
   * Builds a page, computing the cursor from the last job when the page is full (a full page may be
   * followed by an empty one).
   */
  public static JobPage of(List<Job> jobs, int limit) {
    String next =
        jobs.size() == limit ? JobFilter.encodeCursor(jobs.get(jobs.size() - 1).id()) : null;
    return new JobPage(List.copyOf(jobs), next);
  }
}
