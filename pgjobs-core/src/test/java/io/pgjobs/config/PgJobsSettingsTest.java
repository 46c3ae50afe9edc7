package io.pgjobs.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.pgjobs.maintenance.Maintenance;
import io.pgjobs.testkit.GeneratedDocs;
import io.pgjobs.worker.JobWorker;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/** The settings catalogue: complete, consistent, used by the builders, and the documentation's table. */
class PgJobsSettingsTest {
  private static final DataSource UNUSED =
      new PGSimpleDataSource(); // the builders connect only when started

  @Test
  void everySettingIsListedOnceWithItsDefaultInItsRange() throws Exception {
    List<Setting<?>> constants = new ArrayList<>();
    for (Field field : PgJobsSettings.class.getFields()) {
      if (Modifier.isStatic(field.getModifiers()) && field.getType() == Setting.class) {
        constants.add((Setting<?>) field.get(null));
      }
    }
    assertThat(PgJobsSettings.ALL).containsExactlyInAnyOrderElementsOf(constants);
    assertThat(PgJobsSettings.ALL).extracting(Setting::key).doesNotHaveDuplicates();
    assertThat(PgJobsSettings.ALL)
        .extracting(Setting::springProperty)
        .filteredOn(p -> p != null)
        .doesNotHaveDuplicates()
        .allSatisfy(p -> assertThat(p).matches("pgjobs(\\.[a-z]+(-[a-z]+)*)+"));
    assertThat(PgJobsSettings.ALL)
        .allSatisfy(s -> assertThat(s.builders()).as(s.key()).isNotEmpty());
    assertThat(PgJobsSettings.STALE_THRESHOLD.flag()).isEqualTo("--stale-threshold");
    assertThat(PgJobsSettings.STALE_THRESHOLD.environmentVariable())
        .isEqualTo("PGJOBS_STALE_THRESHOLD");
  }

  @Test
  void aDefaultOutsideItsRangeIsRefusedWhenDeclared() {
    assertThatThrownBy(() -> Setting.integer("claim_batch", "claim batch", 0, 1, 10, "x"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("the default of claim_batch is out of its range");
    assertThatThrownBy(() -> Setting.duration("Stale", "stale", "5m", "1s", "1h", "x"))
        .hasMessage("setting key must be snake case, was Stale");
  }

  @Test
  void theBuildersDefaultsAreTheCatalogues() {
    assertThat(Maintenance.DEFAULT_STALE_THRESHOLD).isEqualTo(Duration.ofMinutes(5));
    assertThat(JobWorker.DEFAULT_UNKNOWN_TYPE_GRACE)
        .isEqualTo(Maintenance.DEFAULT_UNKNOWN_TYPE_GRACE)
        .isEqualTo(PgJobsSettings.UNKNOWN_TYPE_GRACE.defaultValue());
    assertThat(JobWorker.DEFAULT_CLAIM_BATCH).isEqualTo(1000);
    assertThat(io.pgjobs.JobClient.DEFAULT_SCHEMA).isEqualTo("pgjobs");
  }

  /** A computed default follows the formula its text states, declared once in the catalogue. */
  @Test
  void theComputedDefaultsFollowTheCataloguesFormulas() {
    Duration stale = PgJobsSettings.STALE_THRESHOLD.defaultValue();
    Duration dead = PgJobsSettings.WORKER_DEAD_AFTER.defaultValue();
    assertThat(PgJobsSettings.defaultHeartbeatInterval(stale, dead)).isEqualTo(dead.dividedBy(4));
    assertThat(PgJobsSettings.defaultRescueInterval(stale, dead)).isEqualTo(dead.dividedBy(4));
    Duration hour = Duration.ofHours(1);
    assertThat(PgJobsSettings.defaultHeartbeatInterval(hour, hour))
        .isEqualTo(PgJobsSettings.defaultRescueInterval(hour, hour))
        .isEqualTo(Duration.ofSeconds(30));
    assertThat(PgJobsSettings.HEARTBEAT_INTERVAL.defaultText()).endsWith(" and 30s");
    assertThat(PgJobsSettings.RESCUE_INTERVAL.defaultText()).endsWith(" and 30s");
    assertThat(Maintenance.DEFAULT_RECURRING_MISSED_AFTER)
        .isEqualTo(PgJobsSettings.defaultRecurringMissedAfter(
            PgJobsSettings.LEASE_TTL.defaultValue(),
            PgJobsSettings.RECURRING_INTERVAL.defaultValue()))
        .isEqualTo(Duration.ofSeconds(22));
  }

  /**
   * Every JobWorker and Maintenance builder method the catalogue names takes its least and greatest value
   * and refuses one step beyond either, with the catalogue's message.
   */
  @Test
  void everyBuilderMethodOfTheCatalogueValidatesWithItsRange() throws Exception {
    int checked = 0;
    for (Setting<?> s : PgJobsSettings.ALL) {
      for (String where : s.builders()) {
        Object builder = where.startsWith("JobWorker.Builder.")
            ? JobWorker.builder(UNUSED)
            : where.startsWith("Maintenance.Builder.") ? Maintenance.builder(UNUSED) : null;
        String name = where.substring(where.lastIndexOf('.') + 1);
        if (builder == null || s.min() == null || !name.matches("[a-zA-Z]+")) {
          continue; // JobClient and ApiServer check at build(); queue(name, n) has its own test
        }
        Class<?> parameter = s.type() == Integer.class ? int.class : s.type();
        Method method = builder.getClass().getMethod(name, parameter);
        method.invoke(builder, s.min());
        method.invoke(builder, s.max());
        for (Object outside : List.of(below(s.min()), above(s.max()))) {
          assertThatThrownBy(() -> invoke(method, builder, outside))
              .as("%s(%s)", where, outside)
              .isInstanceOf(IllegalArgumentException.class)
              .hasMessageStartingWith(s.label() + " must be between " + show(s.min()) + " and "
                  + show(s.max()) + ", was ");
        }
        checked++;
      }
    }
    assertThat(checked).isGreaterThan(20);
  }

  @Test
  void theMessageNamesTheSettingTheRangeAndTheValue() {
    assertThatThrownBy(() -> Maintenance.builder(UNUSED).staleThreshold(Duration.ofDays(2)))
        .hasMessage("stale threshold must be between 1s and 1d, was 2d");
    assertThatThrownBy(() -> JobWorker.builder(UNUSED).claimBatch(0))
        .hasMessage("claim batch must be between 1 and 10000, was 0");
    assertThatThrownBy(() -> JobWorker.builder(UNUSED).pollInterval(null))
        .hasMessage("poll interval must be between 10ms and 1h, was nothing");
  }

  @Test
  void theDocumentationsTableOfTheBuildersSettingsIsGeneratedFromTheCatalogue() {
    GeneratedDocs.check(
        "java", PgJobsSettings.markdownTable(), "pgjobs-core", getClass().getSimpleName());
  }

  private static Object invoke(Method method, Object target, Object argument) throws Throwable {
    try {
      return method.invoke(target, argument);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  private static Object below(Object min) {
    return min instanceof Duration d ? d.minusMillis(1) : (Integer) min - 1;
  }

  private static Object above(Object max) {
    return max instanceof Duration d ? d.plusMillis(1) : (Integer) max + 1;
  }

  private static String show(Object value) {
    return value instanceof Duration d ? DurationText.format(d) : String.valueOf(value);
  }
}
