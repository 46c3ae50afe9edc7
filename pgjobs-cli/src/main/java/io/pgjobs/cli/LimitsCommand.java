package io.pgjobs.cli;

import io.pgjobs.QueueLimits;
import io.pgjobs.QueueLimitsStatus;
import io.pgjobs.config.DurationText;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * {@code pgjobs limits}: a queue's flow control across the fleet ({@link QueueLimits}) at run time: list
 * the limited queues, show one with its busiest partitions, set a queue's limits, clear them. Limits set
 * here win over limits a worker declares in code until they are cleared.
 */
@Command(
    name = "limits",
    mixinStandardHelpOptions = true,
    versionProvider = VersionProvider.class,
    description =
        "List, show, set and clear queues' limits across the fleet (concurrency, rate, per partition).",
    subcommands = {
      LimitsCommand.ListCommand.class,
      LimitsCommand.ShowCommand.class,
      LimitsCommand.SetCommand.class,
      LimitsCommand.ClearCommand.class,
      CommandLine.HelpCommand.class
    })
final class LimitsCommand extends Subcommand {
  private static final Pattern QUEUE = Pattern.compile("[A-Za-z0-9_.:\\-/]{1,255}");
  /** {@code <limit>/<period>[,burst=<n>]}; the period a duration ({@code 1s}, {@code 500ms}) or a bare unit. */
  private static final Pattern RATE = Pattern.compile(
      "\\s*([^/,\\s]+)\\s*/\\s*([^,\\s]+)\\s*(?:,\\s*burst\\s*=\\s*([^,\\s]*)\\s*)?");

  /** What a rate flag accepts, for its help and its errors. */
  static final String RATE_SYNTAX =
      "<limit>/<period>[,burst=<n>], like 100/1m, 5/1s or 100/1m,burst=20"
          + " (limit 1 to " + QueueLimits.MAX_RATE
          + "; period 1ms to 24h: 500ms, 1s, 1m, 1h, or a bare"
          + " unit: 5/s; burst 1 to " + QueueLimits.MAX_RATE
          + ", default: the starts of 200 ms, at least 2 and at most the limit)";

  @Override
  public Integer call() {
    root().err().println("pgjobs limits: a subcommand is required (list, show, set, clear).");
    spec.commandLine().usage(root().err());
    return PgJobsCommand.USAGE;
  }

  /** Runs {@code work} on the database's client. */
  static <T> T withClient(Subcommand command, Function<io.pgjobs.JobClient, T> work) {
    try (Database db = Database.open(command.settings(Map.of()), false, List.of())) {
      return work.apply(db.client());
    }
  }

  /** Checks a QUEUE argument (exit 2 naming what is allowed). */
  static String queue(Subcommand command, String queue) {
    if (queue == null || !QUEUE.matcher(queue).matches()) {
      throw command.usage("invalid queue name '" + queue
          + "'; allowed: 1 to 255 characters of letters, digits and _ . : - /");
    }
    return queue;
  }

  // ------------------------------------------------------------------------------- parsing the
  // flags

  /**
   * Parses a concurrency flag: 1 to {@value QueueLimits#MAX_CONCURRENCY}.
   *
   * @throws IllegalArgumentException saying what was wrong and what is allowed
   */
  static int concurrency(String flag, String text) {
    long n;
    try {
      n = Long.parseLong(text.strip());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "invalid " + flag + " '" + text + "': not a whole number; allowed: 1 to "
              + QueueLimits.MAX_CONCURRENCY + " jobs at once");
    }
    if (n < 1 || n > QueueLimits.MAX_CONCURRENCY) {
      throw new IllegalArgumentException("invalid " + flag + " " + text.strip() + "; allowed: 1 to "
          + QueueLimits.MAX_CONCURRENCY + " jobs at once");
    }
    return (int) n;
  }

  /**
   * Parses a rate flag, {@value #RATE_SYNTAX}.
   *
   * @throws IllegalArgumentException saying what was wrong and what is allowed
   */
  static QueueLimits.Rate rate(String flag, String text) {
    Matcher m = RATE.matcher(text);
    if (!m.matches()) {
      throw new IllegalArgumentException(
          "invalid " + flag + " '" + text + "'; write " + RATE_SYNTAX);
    }
    String prefix = "invalid " + flag + " '" + text + "': ";
    long limit;
    try {
      limit = Long.parseLong(m.group(1));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          prefix + "the limit '" + m.group(1) + "' is not a whole number; write " + RATE_SYNTAX);
    }
    if (limit < 1 || limit > QueueLimits.MAX_RATE) {
      throw new IllegalArgumentException(prefix + "the limit must be 1 to " + QueueLimits.MAX_RATE
          + " starts per period, was " + limit);
    }
    String periodText = m.group(2);
    // A bare unit reads as one of it: 5/s is 5/1s.
    if (periodText.matches("ms|s|m|h|d")) {
      periodText = "1" + periodText;
    }
    Duration period;
    try {
      period = DurationText.parse(periodText);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(prefix + "the period '" + m.group(2)
          + "' is not a duration; allowed: 1ms to 24h, like 500ms, 1s, 1m, 1h");
    }
    if (period.compareTo(QueueLimits.MIN_PERIOD) < 0
        || period.compareTo(QueueLimits.MAX_PERIOD) > 0
        || period.toNanos() % 1_000_000 != 0) {
      throw new IllegalArgumentException(
          prefix + "the period must be whole milliseconds from 1ms to 24h, was " + m.group(2));
    }
    if (m.group(3) == null) {
      return QueueLimits.Rate.of((int) limit, period);
    }
    long burst;
    try {
      burst = Long.parseLong(m.group(3));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(prefix + "the burst '" + m.group(3)
          + "' is not a whole number; allowed: 1 to " + QueueLimits.MAX_RATE);
    }
    if (burst < 1 || burst > QueueLimits.MAX_RATE) {
      throw new IllegalArgumentException(
          prefix + "the burst must be 1 to " + QueueLimits.MAX_RATE + ", was " + burst);
    }
    return new QueueLimits.Rate((int) limit, period, (int) burst);
  }

  // ------------------------------------------------------------------------------------ printing

  /** Limits in one line: {@code at most 50 running, 100/1m (burst 20); per input.host: 2 running, 5/1s}. */
  static String describe(QueueLimits l) {
    List<String> parts = new ArrayList<>();
    if (l.globalConcurrency() != null) {
      parts.add("at most " + l.globalConcurrency() + " running");
    }
    if (l.rate() != null) {
      parts.add(rate(l.rate()));
    }
    String text = String.join(", ", parts);
    if (l.partitionBy() != null) {
      List<String> per = new ArrayList<>();
      if (l.partitionConcurrency() != null) {
        per.add(l.partitionConcurrency() + " running");
      }
      if (l.partitionRate() != null) {
        per.add(rate(l.partitionRate()));
      }
      String partitioned = "per " + l.partitionBy() + ": "
          + (per.isEmpty() ? "partitions take turns" : String.join(", ", per));
      text = text.isEmpty() ? partitioned : text + "; " + partitioned;
    }
    return text.isEmpty() ? "none" : text;
  }

  /** {@code 100/1m (burst 20)}. */
  static String rate(QueueLimits.Rate r) {
    return r.limit() + "/" + DurationText.format(r.period()) + " (burst " + r.burst() + ")";
  }

  /** Why due jobs wait, in words. */
  static String why(String waitingFor, long waiting, Instant nextStart) {
    if (waitingFor == null) {
      return waiting == 0 ? "-" : "a free worker";
    }
    return switch (waitingFor) {
      case QueueLimitsStatus.AT_GLOBAL_LIMIT -> "global concurrency reached";
      case QueueLimitsStatus.RATE_LIMITED ->
        "rate" + (nextStart == null ? "" : ", next start " + nextStart);
      case QueueLimitsStatus.PARTITIONS_BUSY -> "every partition at its limit";
      case QueueLimitsStatus.PARTITION_BUSY -> "partition concurrency reached";
      default -> waitingFor;
    };
  }

  private static String running(long running, Integer limit) {
    return limit == null ? Long.toString(running) : running + "/" + limit;
  }

  /** Prints rows as columns two spaces apart, the last column unpadded. */
  static void table(PrintWriter out, List<String[]> rows) {
    int columns = rows.get(0).length;
    int[] width = new int[columns];
    for (String[] row : rows) {
      for (int i = 0; i < columns; i++) {
        width[i] = Math.max(width[i], row[i].length());
      }
    }
    for (String[] row : rows) {
      StringBuilder line = new StringBuilder();
      for (int i = 0; i < columns; i++) {
        line.append(i == columns - 1 ? row[i] : String.format("%-" + width[i] + "s  ", row[i]));
      }
      out.println(line.toString().stripTrailing());
    }
  }

  /** A partition's key as printed: {@code (none)} for the jobs without one. */
  static String partitionName(String key) {
    return key.isEmpty() ? "(none)" : key;
  }

  /** The limits as JSON (snake_case, as the HTTP API names them). */
  static ObjectNode json(QueueLimits l) {
    ObjectNode node = JobFormat.JSON.createObjectNode();
    node.put("global_concurrency", l.globalConcurrency());
    node.set("rate", json(l.rate()));
    node.put("partition_by", l.partitionBy());
    node.put("partition_concurrency", l.partitionConcurrency());
    node.set("partition_rate", json(l.partitionRate()));
    return node;
  }

  private static tools.jackson.databind.JsonNode json(QueueLimits.Rate r) {
    if (r == null) {
      return JobFormat.JSON.getNodeFactory().nullNode();
    }
    ObjectNode node = JobFormat.JSON.createObjectNode();
    node.put("limit", r.limit());
    node.put("period", DurationText.format(r.period()));
    node.put("period_ms", r.period().toMillis());
    node.put("burst", r.burst());
    return node;
  }

  /** A status as JSON. */
  static ObjectNode json(QueueLimitsStatus s) {
    ObjectNode node = JobFormat.JSON.createObjectNode();
    node.put("queue", s.queue());
    node.set("limits", json(s.limits()));
    node.put("source", s.source());
    node.put("updated_at", s.updatedAt() == null ? null : s.updatedAt().toString());
    node.put("running", s.running());
    node.put("waiting", s.waiting());
    node.put("next_start", s.nextStart() == null ? null : s.nextStart().toString());
    node.put("waiting_for", s.waitingFor());
    ArrayNode partitions = node.putArray("partitions");
    for (QueueLimitsStatus.Partition p : s.partitions()) {
      ObjectNode pn = partitions.addObject();
      pn.put("partition", p.partition());
      pn.put("running", p.running());
      pn.put("waiting", p.waiting());
      pn.put("next_start", p.nextStart() == null ? null : p.nextStart().toString());
      pn.put("waiting_for", p.waitingFor());
    }
    return node;
  }

  /** One queue's status as labelled lines plus its busiest partitions. */
  static void print(PrintWriter out, QueueLimitsStatus s) {
    QueueLimits l = s.limits();
    out.println("queue:       " + s.queue());
    out.println("limits:      " + describe(l));
    out.println("set by:      " + ("code".equals(s.source()) ? "a worker's code" : s.source())
        + (s.updatedAt() == null ? "" : ", " + s.updatedAt()));
    out.println("running:     " + s.running()
        + (l.globalConcurrency() == null ? "" : " of " + l.globalConcurrency()));
    out.println("waiting:     " + s.waiting());
    out.println("waiting for: " + why(s.waitingFor(), s.waiting(), s.nextStart()));
    if (l.rate() != null) {
      out.println(
          "next start:  " + (s.nextStart() == null ? "now" : s.nextStart().toString()));
    }
    if (l.partitionBy() != null) {
      if (s.partitions().isEmpty()) {
        out.println("partitions:  none running or waiting");
        return;
      }
      out.println("partitions (busiest " + s.partitions().size() + "):");
      List<String[]> rows = new ArrayList<>();
      rows.add(new String[] {"  PARTITION", "RUNNING", "WAITING", "WAITING FOR"});
      for (QueueLimitsStatus.Partition p : s.partitions()) {
        rows.add(new String[] {
          "  " + partitionName(p.partition()),
          running(p.running(), l.partitionConcurrency()),
          Long.toString(p.waiting()),
          why(p.waitingFor(), p.waiting(), p.nextStart())
        });
      }
      table(out, rows);
    }
  }

  // ---------------------------------------------------------------------------------- subcommands

  /** {@code pgjobs limits list}. */
  @Command(
      name = "list",
      mixinStandardHelpOptions = true,
      versionProvider = VersionProvider.class,
      description =
          "List every limited queue: its limits, running (of its global limit), waiting, and why they wait.")
  static final class ListCommand extends Subcommand {
    @Option(
        names = "--json",
        description =
            "Print {\"queues\": [...]}, each queue's limits and status (snake_case names).")
    boolean json;

    @Override
    public Integer call() {
      List<QueueLimitsStatus> all = withClient(this, io.pgjobs.JobClient::limitsStatus);
      if (json) {
        ObjectNode root = JobFormat.JSON.createObjectNode();
        ArrayNode queues = root.putArray("queues");
        all.forEach(s -> queues.add(json(s)));
        out().println(JobFormat.JSON.writeValueAsString(root));
        return PgJobsCommand.OK;
      }
      if (all.isEmpty()) {
        out().println("no limited queues");
        return PgJobsCommand.OK;
      }
      List<String[]> rows = new ArrayList<>();
      rows.add(new String[] {"QUEUE", "RUNNING", "WAITING", "WAITING FOR", "SET BY", "LIMITS"});
      for (QueueLimitsStatus s : all) {
        rows.add(new String[] {
          s.queue(),
          running(s.running(), s.limits().globalConcurrency()),
          Long.toString(s.waiting()),
          why(s.waitingFor(), s.waiting(), s.nextStart()),
          s.source() == null ? "-" : s.source(),
          describe(s.limits())
        });
      }
      table(out(), rows);
      return PgJobsCommand.OK;
    }
  }

  /** {@code pgjobs limits show QUEUE}. */
  @Command(
      name = "show",
      mixinStandardHelpOptions = true,
      versionProvider = VersionProvider.class,
      description = {
        "Show one queue's limits, what they hold back now and its busiest partitions (at most 50).",
        "A queue without limits: 'no limits' (exit 0)."
      })
  static final class ShowCommand extends Subcommand {
    @Parameters(index = "0", paramLabel = "QUEUE", description = "The queue.")
    String queue;

    @Option(
        names = "--json",
        description =
            "Print the queue's limits and status as JSON (snake_case names; limits null: none).")
    boolean json;

    @Override
    public Integer call() {
      String name = queue(this, queue);
      Optional<QueueLimitsStatus> status = withClient(this, c -> c.limitsStatus(name));
      if (json) {
        ObjectNode node = status.map(LimitsCommand::json).orElseGet(() -> {
          ObjectNode none = JobFormat.JSON.createObjectNode();
          none.put("queue", name);
          none.putNull("limits");
          return none;
        });
        out().println(JobFormat.JSON.writeValueAsString(node));
      } else if (status.isEmpty()) {
        out().println("queue " + name + ": no limits");
      } else {
        print(out(), status.get());
      }
      return PgJobsCommand.OK;
    }
  }

  /** {@code pgjobs limits set QUEUE --global-concurrency N ...}. */
  @Command(
      name = "set",
      mixinStandardHelpOptions = true,
      versionProvider = VersionProvider.class,
      description = {
        "Set a queue's limits across the fleet, replacing all it had (a flag left out is",
        "no limit). They win over limits a worker declares in code until 'pgjobs limits",
        "clear'. Jobs over a limit wait; partitions take turns.",
        "  pgjobs limits set webhooks --partition-by input.host \\",
        "      --partition-concurrency 2 --partition-rate 5/1s",
        "  pgjobs limits set reports --global-concurrency 10 --rate 100/1m,burst=20"
      })
  static final class SetCommand extends Subcommand {
    @Parameters(index = "0", paramLabel = "QUEUE", description = "The queue.")
    String queue;

    @Option(
        names = "--global-concurrency",
        paramLabel = "<n>",
        description = "At most n of the queue's jobs running at once in the whole fleet (1 to "
            + QueueLimits.MAX_CONCURRENCY + ").")
    String globalConcurrency;

    @Option(
        names = "--rate",
        paramLabel = "<rate>",
        description =
            "At most this many of the queue's jobs started per period: " + RATE_SYNTAX + ".")
    String rate;

    @Option(
        names = "--partition-by",
        paramLabel = "<rule>",
        description =
            "What a job's partition is: type (its job type), input.<field> (that field of its"
                + " payload, e.g. input.host or input.account.id) or partition (only a key given at enqueue).")
    String partitionBy;

    @Option(
        names = "--partition-concurrency",
        paramLabel = "<n>",
        description = "At most n jobs of one partition running at once (1 to "
            + QueueLimits.MAX_CONCURRENCY
            + "; 1 runs each partition's jobs strictly in order). Needs --partition-by.")
    String partitionConcurrency;

    @Option(
        names = "--partition-rate",
        paramLabel = "<rate>",
        description =
            "At most this many jobs of one partition started per period, written like --rate."
                + " Needs --partition-by.")
    String partitionRate;

    @Override
    public Integer call() {
      String name = queue(this, queue);
      QueueLimits limits = limits();
      withClient(this, c -> {
        c.setLimits(name, limits);
        return null;
      });
      out().println("limits of queue " + name + " set: " + describe(limits));
      return PgJobsCommand.OK;
    }

    /** The limits the flags give, every flag checked before anything is stored. */
    QueueLimits limits() {
      if (globalConcurrency == null
          && rate == null
          && partitionBy == null
          && partitionConcurrency == null
          && partitionRate == null) {
        throw usage("no limit given; give at least one of --global-concurrency, --rate,"
            + " --partition-by (with --partition-concurrency and/or --partition-rate);"
            + " 'pgjobs limits clear " + queue + "' removes them");
      }
      if (partitionBy == null && (partitionConcurrency != null || partitionRate != null)) {
        throw usage((partitionConcurrency != null ? "--partition-concurrency" : "--partition-rate")
            + " needs --partition-by: say what a job's partition is (type, partition or"
            + " input.<field>, e.g. input.host)");
      }
      try {
        QueueLimits.Builder b = QueueLimits.builder();
        if (globalConcurrency != null) {
          b.globalConcurrency(concurrency("--global-concurrency", globalConcurrency));
        }
        if (rate != null) {
          QueueLimits.Rate r = rate("--rate", rate);
          b.rate(r.limit(), r.period(), r.burst());
        }
        if (partitionBy != null) {
          try {
            b.partitionBy(partitionBy);
          } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                "invalid --partition-by: " + e.getMessage().replaceFirst("^partition_by ", ""));
          }
        }
        if (partitionConcurrency != null) {
          b.partitionConcurrency(concurrency("--partition-concurrency", partitionConcurrency));
        }
        if (partitionRate != null) {
          QueueLimits.Rate r = rate("--partition-rate", partitionRate);
          b.partitionRate(r.limit(), r.period(), r.burst());
        }
        return b.build();
      } catch (IllegalArgumentException e) {
        throw usage(e.getMessage());
      }
    }
  }

  /** {@code pgjobs limits clear QUEUE}. */
  @Command(
      name = "clear",
      mixinStandardHelpOptions = true,
      versionProvider = VersionProvider.class,
      description = {
        "Remove a queue's limits: its workers claim it as fast as their lanes allow again.",
        "Limits a worker declares in code apply again when such a worker next starts."
      })
  static final class ClearCommand extends Subcommand {
    @Parameters(index = "0", paramLabel = "QUEUE", description = "The queue.")
    String queue;

    @Override
    public Integer call() {
      String name = queue(this, queue);
      withClient(this, c -> {
        c.clearLimits(name);
        return null;
      });
      out().println("limits of queue " + name + " cleared");
      return PgJobsCommand.OK;
    }
  }
}
