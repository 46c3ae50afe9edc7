package io.pgjobs.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** Parsing database URLs the ways people write them, and never showing a password. */
class DatabaseUrlTest {
  @Test
  void aPasswordHoldingAtSignsAndColonsIsSplitAtTheLastAtSign() {
    DatabaseUrl url = DatabaseUrl.parse("postgres://postgres:p@ss:w@rd@db.example.com:6543/app?sslmode=require");
    assertThat(url.user()).isEqualTo("postgres");
    assertThat(url.password()).isEqualTo("p@ss:w@rd");
    assertThat(url.jdbcUrl()).isEqualTo("jdbc:postgresql://db.example.com:6543/app?sslmode=require");
    assertThat(url.database()).isEqualTo("app");
    assertThat(url.toString()).doesNotContain("p@ss", "w@rd");
  }

  @Test
  void percentEncodedPartsAreDecodedAndAPlusStaysAPlus() {
    DatabaseUrl url = DatabaseUrl.parse("postgresql://us%40er:a%2Fb%3Fc%23d%25e+f@127.0.0.1/pgjobs");
    assertThat(url.user()).isEqualTo("us@er");
    assertThat(url.password()).isEqualTo("a/b?c#d%e+f");
    assertThat(url.jdbcUrl()).isEqualTo("jdbc:postgresql://127.0.0.1:5432/pgjobs");
  }

  @Test
  void hostsWithUnderscoresAndIpv6AndNoCredentialsParse() {
    assertThat(DatabaseUrl.parse("postgres://db_1/x").jdbcUrl()).isEqualTo("jdbc:postgresql://db_1:5432/x");
    assertThat(DatabaseUrl.parse("postgres://u@[::1]:5433/x").jdbcUrl()).isEqualTo("jdbc:postgresql://[::1]:5433/x");
    DatabaseUrl bare = DatabaseUrl.parse("postgresql://localhost");
    assertThat(bare.user()).isNull();
    assertThat(bare.password()).isNull();
    assertThat(bare.database()).isEqualTo("postgres");
  }

  @Test
  void noErrorShowsAnyPartOfThePassword() {
    String[] bad = {
      "postgres://postgres:Qx7@Zk9@/db",             // no host
      "postgres://postgres:Qx7/Zk9@host/db",         // unencoded '/' in the password
      "postgres://postgres:Qx7?Zk9@host/db",         // unencoded '?'
      "postgres://postgres:Qx7#Zk9@host/db",         // unencoded '#'
      "postgres://postgres:Qx7%zzZk9@host/db",       // bad escape
      "postgres://postgres:Qx7@Zk9@host:99999/db",   // bad port
      "postgres://postgres:Qx7@Zk9@host/bad$name",   // bad database name
      "postgres://postgres:Qx7:Zk9@ho$t/db",         // bad host
      "jdbc:postgresql://host/db?user=u&password=Qx7%zzZk9",
    };
    for (String text : bad) {
      assertThatThrownBy(() -> DatabaseUrl.parse(text)).as(text)
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
    assertThat(DatabaseUrl.parse("jdbc:postgresql://host/db?user=u&password=secret2").toString()).doesNotContain("secret2");
  }
}
