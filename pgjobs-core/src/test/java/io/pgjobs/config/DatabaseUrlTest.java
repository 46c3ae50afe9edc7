package io.pgjobs.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Parsing database URLs the ways people write them, and never showing a password. */
class DatabaseUrlTest {
  @Test
  void aPasswordHoldingAtSignsAndColonsIsSplitAtTheLastAtSign() {
    DatabaseUrl url =
        DatabaseUrl.parse("postgres://postgres:p@ss:w@rd@db.example.com:6543/app?sslmode=require");
    assertThat(url.user()).isEqualTo("postgres");
    assertThat(url.password()).isEqualTo("p@ss:w@rd");
    assertThat(url.jdbcUrl())
        .isEqualTo("jdbc:postgresql://db.example.com:6543/app?sslmode=require");
    assertThat(url.database()).isEqualTo("app");
    assertThat(url.toString()).doesNotContain("p@ss", "w@rd");
  }

  @Test
  void percentEncodedPartsAreDecodedAndAPlusStaysAPlus() {
    DatabaseUrl url =
        DatabaseUrl.parse("postgresql://us%40er:a%2Fb%3Fc%23d%25e+f@127.0.0.1/pgjobs");
    assertThat(url.user()).isEqualTo("us@er");
    assertThat(url.password()).isEqualTo("a/b?c#d%e+f");
    assertThat(url.jdbcUrl()).isEqualTo("jdbc:postgresql://127.0.0.1:5432/pgjobs");
  }

  @Test
  void hostsWithUnderscoresAndIpv6AndNoCredentialsParse() {
    assertThat(DatabaseUrl.parse("postgres://db_1/x").jdbcUrl())
        .isEqualTo("jdbc:postgresql://db_1:5432/x");
    assertThat(DatabaseUrl.parse("postgres://u@[::1]:5433/x").jdbcUrl())
        .isEqualTo("jdbc:postgresql://[::1]:5433/x");
    DatabaseUrl bare = DatabaseUrl.parse("postgresql://localhost");
    assertThat(bare.user()).isNull();
    assertThat(bare.password()).isNull();
    assertThat(bare.database()).isEqualTo("postgres");
  }

  @Test
  void noErrorShowsAnyPartOfThePassword() {
    String[] bad = {
      "postgres://postgres:Qx7@Zk9@/db", // no host
      "postgres://postgres:Qx7/Zk9@host/db", // unencoded '/' in the password
      "postgres://postgres:Qx7?Zk9@host/db", // unencoded '?'
      "postgres://postgres:Qx7#Zk9@host/db", // unencoded '#'
      "postgres://postgres:Qx7%zzZk9@host/db", // bad escape
      "postgres://postgres:Qx7@Zk9@host:99999/db", // bad port
      "postgres://postgres:Qx7@Zk9@host/bad$name", // bad database name
      "postgres://postgres:Qx7:Zk9@ho$t/db", // bad host
      "jdbc:postgresql://host/db?user=u&password=Qx7%zzZk9",
    };
    for (String text : bad) {
      assertThatThrownBy(() -> DatabaseUrl.parse(text))
          .as(text)
          .isInstanceOf(IllegalArgumentException.class)
          .satisfies(e -> assertThat(e.getMessage()).as(text).doesNotContain("Qx7", "Zk9"));
    }
    assertThatThrownBy(() -> DatabaseUrl.parse("postgres://postgres:p@ss@/db"))
        .hasMessageStartingWith("database URL 'postgres://postgres:***@/db' has no host")
        .hasMessageContaining("%2F");
    assertThatThrownBy(() -> DatabaseUrl.parse("postgres://postgres:pa/ss@host/db"))
        .hasMessageContaining("write them as %2F, %3F, %23 and %25");
  }

  @Test
  void aPasswordInTheQueryIsHiddenToo() {
    DatabaseUrl url = DatabaseUrl.parse("postgres://host/db?user=u&password=secret1");
    assertThat(url.toString()).doesNotContain("secret1").contains("password=***");
    assertThat(DatabaseUrl.parse("jdbc:postgresql://host/db?user=u&password=secret2")
            .toString())
        .doesNotContain("secret2");
  }

  @Test
  void aCommaListOfHostsBecomesPgJdbcsHostList() {
    DatabaseUrl url = DatabaseUrl.parse(
        "postgresql://u:pw@h1:5432,h2.example.com:5433/db?target_session_attrs=read-write");
    assertThat(url.jdbcUrl())
        .isEqualTo("jdbc:postgresql://h1:5432,h2.example.com:5433/db?targetServerType=primary");
    assertThat(url.user()).isEqualTo("u");
    assertThat(url.password()).isEqualTo("pw");
    assertThat(url.withDatabase("other").jdbcUrl())
        .isEqualTo("jdbc:postgresql://h1:5432,h2.example.com:5433/other?targetServerType=primary");
    assertThat(DatabaseUrl.parse("postgres://h1,h2/db").jdbcUrl())
        .isEqualTo("jdbc:postgresql://h1:5432,h2:5432/db");
  }

  @Test
  void bracketedIpv6HostsMayBeListed() {
    assertThat(DatabaseUrl.parse("postgres://u@[::1]:6432,[fe80::2],10.0.0.3:7/db?sslmode=require")
            .jdbcUrl())
        .isEqualTo("jdbc:postgresql://[::1]:6432,[fe80::2]:5432,10.0.0.3:7/db?sslmode=require");
  }

  @Test
  void hostsAndPortsMayComeFromTheQueryAsInLibpq() {
    assertThat(DatabaseUrl.parse("postgresql://u@/db?host=a,b&port=5432,5433&sslmode=require")
            .jdbcUrl())
        .isEqualTo("jdbc:postgresql://a:5432,b:5433/db?sslmode=require");
    assertThat(DatabaseUrl.parse("postgresql:///db?host=a,b,::1&port=6000").jdbcUrl())
        .isEqualTo("jdbc:postgresql://a:6000,b:6000,[::1]:6000/db");
    // The query's host replaces the authority's, as libpq has it.
    assertThat(DatabaseUrl.parse("postgresql://ignored:1/db?host=c").jdbcUrl())
        .isEqualTo("jdbc:postgresql://c:5432/db");
  }

  @ParameterizedTest
  @CsvSource({
    "read-write, primary",
    "any, any",
    "read-only, secondary",
    "primary, primary",
    "standby, secondary",
    "prefer-standby, preferSecondary"
  })
  void targetSessionAttrsMapsToPgJdbcsTargetServerType(String attrs, String serverType) {
    assertThat(DatabaseUrl.parse("postgres://h1,h2/db?a=1&target_session_attrs=" + attrs + "&b=2")
            .jdbcUrl())
        .isEqualTo("jdbc:postgresql://h1:5432,h2:5432/db?a=1&b=2&targetServerType=" + serverType);
  }

  @Test
  void badHostListsAndSessionAttrsSayWhatIsAllowed() {
    assertThatThrownBy(() -> DatabaseUrl.parse("postgres://u:Qx7@h1,,h2/db"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("host 2 of 3 is empty")
        .hasMessageNotContaining("Qx7");
    assertThatThrownBy(() -> DatabaseUrl.parse("postgres:///db?host=a,b&port=1,2,3"))
        .hasMessageContaining("3 ports for 2 hosts; give one port for all hosts or one per host");
    assertThatThrownBy(() -> DatabaseUrl.parse("postgres://h1,h2/db?target_session_attrs=writable"))
        .hasMessageContaining("target_session_attrs 'writable'")
        .hasMessageContaining(
            "allowed: any, read-write, read-only, primary, standby, prefer-standby");
    assertThatThrownBy(() -> DatabaseUrl.parse("postgres://h1,[::1/db"))
        .hasMessageContaining("unclosed '['");
    assertThatThrownBy(() -> DatabaseUrl.parse("postgres://h1:5432,h2:x/db"))
        .hasMessageContaining("invalid port 'x'");
    assertThatThrownBy(() -> DatabaseUrl.parse("postgres:///db?host=/var/run/postgresql"))
        .hasMessageContaining("Unix-domain socket directory '/var/run/postgresql'")
        .hasMessageContaining("pgJDBC connects over TCP only");
    assertThatThrownBy(() ->
            DatabaseUrl.parse("postgres://h1/db?target_session_attrs=any&targetServerType=primary"))
        .hasMessageContaining("both target_session_attrs and targetServerType");
  }
}
