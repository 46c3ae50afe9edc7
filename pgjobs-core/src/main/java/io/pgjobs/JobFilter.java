package io.pgjobs;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * Which jobs {@link JobClient#list} returns, newest first, a page at a time.
 *
 * @param states states to include; empty for all
 * @param types type names to include; empty for all
 * @param queues queues to include; empty for all
 * @param createdAfter only jobs created after this instant, or null. Creation time here is the time in
 *     the job's id (a UUIDv7, made when the enqueue was called), which orders the list, so the filter is a
 *     range of ids read through the id index. Compared to the millisecond, which is all an id holds, and
 *     exclusive: a job of the bound's own millisecond is neither before nor after it. The id's time is
 *     usually a little earlier than {@link Job#createdAt()} (the enqueue transaction's start, from the
 *     database's clock), and later for a job enqueued in a transaction that was already open.
 * @param createdBefore only jobs created before this instant, or null; creation time as for {@code
 *     createdAfter}
 * @param limit page size, 1 to {@value #MAX_LIMIT}
 * @param cursor the {@link JobPage#nextCursor()} of the previous page, or null for the first
 * @param text only jobs whose payload (as JSON text) or context contains this text, ignoring case; null
 *     for any. The newest 5,000 finished jobs are searched first; past them, a trigram index serves texts of
 *     3 or more characters where the operator created it (docs/operations.md; it costs every finished job
 *     a write, so it is not created by default), otherwise the rows are read newest first, so a rare text
 *     over a large table is slow.
 * @param scheduled {@code true}: only scheduled jobs (queued, not due yet); {@code false}: no scheduled
 *     jobs; null: either
 */
public record JobFilter(
    Set<JobState> states,
    Set<String> types,
    Set<String> queues,
    Instant createdAfter,
    Instant createdBefore,
    int limit,
    String cursor,
    String text,
    Boolean scheduled) {

  /** Page size when none is given: {@value}. */
  public static final int DEFAULT_LIMIT = 50;
  /** Largest page: {@value}. */
  public static final int MAX_LIMIT = 1000;
  /** Longest search text: {@value} characters. */
  public static final int MAX_TEXT_LENGTH = 200;

  /** Validates. */
  public JobFilter {
    states = states == null ? Set.of() : Set.copyOf(states);
    types = types == null ? Set.of() : Set.copyOf(types);
    queues = queues == null ? Set.of() : Set.copyOf(queues);
    if (limit < 1 || limit > MAX_LIMIT) {
      throw new InvalidJobException(
          "limit", "must be between 1 and " + MAX_LIMIT + ", was " + limit);
    }
    if (cursor != null) {
      decodeCursor(cursor);
    }
    if (text != null && text.isEmpty()) {
      text = null;
    }
    if (text != null && text.length() > MAX_TEXT_LENGTH) {
      throw new InvalidJobException(
          "text", "must be at most " + MAX_TEXT_LENGTH + " characters, was " + text.length());
    }
  }

  /** A filter without the scheduled condition (the form before {@code scheduled} existed). */
  public JobFilter(
      Set<JobState> states,
      Set<String> types,
      Set<String> queues,
      Instant createdAfter,
      Instant createdBefore,
      int limit,
      String cursor,
      String text) {
    this(states, types, queues, createdAfter, createdBefore, limit, cursor, text, null);
  }

  /** A filter without a search text (the form before {@code text} existed). */
  public JobFilter(
      Set<JobState> states,
      Set<String> types,
      Set<String> queues,
      Instant createdAfter,
      Instant createdBefore,
      int limit,
      String cursor) {
    this(states, types, queues, createdAfter, createdBefore, limit, cursor, null, null);
  }

  /** All jobs, first page of {@value #DEFAULT_LIMIT}. */
  public static JobFilter all() {
    return builder().build();
  }

  /** A builder with nothing set. */
  public static Builder builder() {
    return new Builder();
  }

  /** The id after which this page starts (exclusive), or null for the first page. */
  public UUID after() {
    return cursor == null ? null : decodeCursor(cursor);
  }

  /** Encodes a position as an opaque cursor. */
  static String encodeCursor(UUID lastId) {
    return Base64.getUrlEncoder()
        .withoutPadding()
        .encodeToString(("v1:" + lastId).getBytes(StandardCharsets.UTF_8));
  }

  private static UUID decodeCursor(String cursor) {
    try {
      String text = new String(Base64.getUrlDecoder().decode(cursor), StandardCharsets.UTF_8);
      if (!text.startsWith("v1:")) {
        throw new IllegalArgumentException("bad prefix");
      }
      UUID id = UUID.fromString(text.substring(3));
      // UUID.fromString accepts short forms ("1-1-1-1-1") and the decoder padding: only what
      // encodeCursor wrote is a cursor.
      if (!encodeCursor(id).equals(cursor)) {
        throw new IllegalArgumentException("not canonical");
      }
      return id;
    } catch (IllegalArgumentException e) {
      throw new InvalidJobException(
          "cursor", "'" + cursor + "' is not a cursor returned by a previous page (nextCursor)");
    }
  }

  /** Builder of {@link JobFilter}. */
  public static final class Builder {
    private final List<JobState> states = new ArrayList<>();
    private final List<String> types = new ArrayList<>();
    private final List<String> queues = new ArrayList<>();
    private Instant createdAfter;
    private Instant createdBefore;
    private int limit = DEFAULT_LIMIT;
    private String cursor;
    private String text;
    private Boolean scheduled;

    private Builder() {}

    /** Include these states. */
    public Builder state(JobState... states) {
      this.states.addAll(List.of(states));
      return this;
    }

    /** Include these job types. */
    public Builder type(String... types) {
      this.types.addAll(List.of(types));
      return this;
    }

    /** Include these queues. */
    public Builder queue(String... queues) {
      this.queues.addAll(List.of(queues));
      return this;
    }

    /** Only jobs created after this instant (the time in the job's id: see {@link JobFilter}). */
    public Builder createdAfter(Instant instant) {
      this.createdAfter = instant;
      return this;
    }

    /** Only jobs created before this instant (the time in the job's id: see {@link JobFilter}). */
    public Builder createdBefore(Instant instant) {
      this.createdBefore = instant;
      return this;
    }

    /** Page size, 1 to {@value JobFilter#MAX_LIMIT}. */
    public Builder limit(int limit) {
      this.limit = limit;
      return this;
    }

    /** Continue after the page that returned this cursor. */
    public Builder cursor(String cursor) {
      this.cursor = cursor;
      return this;
    }

    /** Only jobs whose payload (as JSON text) or context contains {@code text}, ignoring case; null or empty for any. */
    public Builder text(String text) {
      this.text = text;
      return this;
    }

    /** {@code true}: only scheduled jobs (queued, not due yet); {@code false}: none of them; null: either. */
    public Builder scheduled(Boolean scheduled) {
      this.scheduled = scheduled;
      return this;
    }

    /** Validates and builds. */
    public JobFilter build() {
      return new JobFilter(
          Set.copyOf(states),
          Set.copyOf(types),
          Set.copyOf(queues),
          createdAfter,
          createdBefore,
          limit,
          cursor,
          text,
          scheduled);
    }
  }
}
