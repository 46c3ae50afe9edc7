package io.pgjobs.spring;

import io.pgjobs.config.PgJobsSettings;
import io.pgjobs.config.Setting;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The documentation's table of the {@code pgjobs.*} properties: the rows of the properties the builders and
 * the CLI share come from {@link PgJobsSettings}, those of the starter's own switches from
 * {@link PgJobsProperties}' defaults with the words below.
 */
final class SpringPropertiesTable {
  private SpringPropertiesTable() {}

  /** One row. */
  record Row(String property, String defaultText, String allowed, String description) {}

  /** The rows, in documentation order; every catalogue setting with a Spring property among them. */
  static List<Row> rows() {
    PgJobsProperties p = new PgJobsProperties();
    List<Row> rows = new ArrayList<>();
    rows.add(catalogue(PgJobsSettings.SCHEMA));
    rows.add(new Row(
        "pgjobs.migrate-on-start",
        code(p.isMigrateOnStart()),
        "`true` or `false`",
        "create the schema or apply pending pgjobs migrations at startup"));
    rows.add(
        new Row(
            "pgjobs.worker.enabled",
            code(p.getWorker().isEnabled()),
            "`true` or `false`",
            "run a worker in this application; `false` on web-only nodes that enqueue but run no jobs"));
    rows.add(new Row(
        "pgjobs.worker.queues.<queue>",
        "the handlers' queues",
        "concurrency " + PgJobsSettings.CONCURRENCY.allowedText()
            + " (a queue with dots: `pgjobs.worker.queues[billing.eu]=5`)",
        "queues to serve and the most jobs run at once in each"));
    for (Setting<?> s : PgJobsSettings.ALL) {
      if (s.springProperty() != null && s.springProperty().startsWith("pgjobs.worker.")) {
        rows.add(catalogue(s));
      }
    }
    rows.add(
        new Row("pgjobs.worker.id", "`host:pid:random`", "1–255 characters", "this worker's id"));
    rows.add(new Row(
        "pgjobs.web.enabled",
        code(p.getWeb().isEnabled()),
        "`true` or `false`",
        "mount the API and dashboard (needs `pgjobs-server` and a servlet web application)"));
    rows.add(new Row(
        "pgjobs.web.path",
        code(p.getWeb().getPath()),
        "a fixed path: starts with `/`, no trailing `/`, no wildcard, not `/` (e.g. `/admin/jobs`)",
        "where the API and dashboard are mounted"));
    rows.add(new Row(
        "pgjobs.web.tokens",
        "none",
        "comma-separated `read:TOKEN`, `admin:TOKEN` or `TOKEN`, each 16+ characters without white space",
        "bearer tokens the mount accepts"));
    rows.add(new Row(
        "pgjobs.web.allow-unauthenticated",
        code(p.getWeb().isAllowUnauthenticated()),
        "`true` or `false`",
        "`true` to mount without tokens (something else protects the path)"));
    rows.add(new Row(
        "pgjobs.web.accept-unknown-types",
        code(p.getWeb().isAcceptUnknownTypes()),
        "`true` or `false`",
        "accept `POST /jobs` for types without a handler bean here"));
    rows.add(catalogue(PgJobsSettings.REQUEST_TIMEOUT));
    rows.add(new Row(
        "pgjobs.web.allowed-origins",
        "none",
        "comma-separated `scheme://host[:port]` or `*`",
        "pages besides the application's own that may change jobs, queues and schedules (others get 403; see"
            + " docs/API.md, \"Cross-site requests and DNS rebinding\")"));
    rows.add(new Row(
        "pgjobs.web.allowed-hosts",
        "none",
        "comma-separated host names, `*.example.com` or `*`",
        "without tokens, the names the mount answers to besides `localhost`, `*.localhost` and IP addresses"
            + " (others get 421)"));
    return rows;
  }

  /** The table in Markdown. */
  static String markdown() {
    StringBuilder out = new StringBuilder();
    out.append("| property | default | allowed | what it does |\n");
    out.append("|---|---|---|---|\n");
    Set<String> seen = new LinkedHashSet<>();
    for (Row row : rows()) {
      if (!seen.add(row.property())) {
        throw new IllegalStateException(row.property() + " is in the table twice");
      }
      out.append("| `")
          .append(row.property())
          .append("` | ")
          .append(row.defaultText())
          .append(" | ")
          .append(row.allowed())
          .append(" | ")
          .append(row.description())
          .append(" |\n");
    }
    return out.toString();
  }

  /** A row from the catalogue, saying the catalogue's name where the property's differs. */
  private static Row catalogue(Setting<?> s) {
    String last = s.springProperty().substring(s.springProperty().lastIndexOf('.') + 1);
    String description = s.description();
    if (!last.equals(s.key().replace('_', '-'))) {
      description += " (`" + s.key() + "` of the builders and the CLI)";
    }
    return new Row(
        s.springProperty(), PgJobsSettings.markdownDefault(s), s.allowedText(), description);
  }

  private static String code(Object value) {
    return "`" + value + "`";
  }
}
