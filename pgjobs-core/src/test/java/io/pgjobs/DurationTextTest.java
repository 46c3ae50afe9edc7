package io.pgjobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.pgjobs.config.DurationText;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.NullSource;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link DurationText}: the operator-friendly duration syntax. No database. */
class DurationTextTest {

  @ParameterizedTest(name = "{0} = {1}")
  @CsvSource({
    "500ms, PT0.5S",
    "5s, PT5S",
    "10m, PT10M",
    "1h, PT1H",
    "1h30m, PT1H30M",
    "2d, PT48H",
    "1h30m15s250ms, PT1H30M15.25S",
    "0s, PT0S",
    "PT5S, PT5S",
    "pt1m, PT1M",
  })
  void parsesUnitsSumsAndIso8601(String text, String expected) {
    assertThat(DurationText.parse(text)).isEqualTo(Duration.parse(expected));
  }

  @ParameterizedTest(name = "''{0}''")
  @ValueSource(strings = {"5x", "", "   ", "-1s", "1.5s", "5", "s", "1h 30m", "PTxyz", "1h-30m"})
  @NullSource
  void garbageIsRejectedWithAMessageListingWhatIsAllowed(String text) {
    assertThatThrownBy(() -> DurationText.parse(text))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("allowed")
        .hasMessageContaining("ms, s, m, h or d")
        .hasMessageContaining("1h30m")
        .hasMessageContaining("PT5S");
  }

  @ParameterizedTest
  @ValueSource(strings = {"5x", "-1s", "1.5s"})
  void rejectionMessageQuotesTheInput(String text) {
    assertThatThrownBy(() -> DurationText.parse(text)).hasMessageContaining("'" + text + "'");
  }

  @Test
  void hugeNumbersAreRejectedNotOverflowed() {
    assertThatThrownBy(() -> DurationText.parse("99999999999999999999s"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("too large");
    assertThatThrownBy(() -> DurationText.parse(Long.MAX_VALUE + "d"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("too large");
  }

  @ParameterizedTest(name = "{0} -> {1}")
  @CsvSource({
    "PT0S, 0s",
    "PT0.25S, 250ms",
    "PT1H30M, 1h30m",
    "PT48H, 2d",
    "PT49H0.001S, 2d1h1ms",
    "PT5S, 5s"
  })
  void formatsInTheShortestParsableForm(String iso, String text) {
    assertThat(DurationText.format(Duration.parse(iso))).isEqualTo(text);
  }

  @Test
  void formatRoundTripsThroughParse() {
    Random random = new Random(42);
    for (int i = 0; i < 500; i++) {
      long ms = switch (i % 4) {
        case 0 -> random.nextInt(1_000);
        case 1 -> random.nextInt(3_600_000);
        case 2 -> random.nextLong(0, 30L * 86_400_000L);
        default -> random.nextInt(100) * 60_000L; // whole minutes
      };
      Duration duration = Duration.ofMillis(ms);
      String text = DurationText.format(duration);
      assertThat(DurationText.parse(text))
          .as("parse(format(%s)) = parse(%s)", duration, text)
          .isEqualTo(duration);
    }
  }
}
