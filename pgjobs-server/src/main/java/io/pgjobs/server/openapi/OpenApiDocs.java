package io.pgjobs.server.openapi;

import io.pgjobs.server.api.Reply;
import io.pgjobs.server.api.Routes;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.dataformat.yaml.YAMLMapper;

/**
 * The API's contract: the hand-written OpenAPI document ({@value #SPEC_RESOURCE}, spec first: the
 * server follows it, a test checks that every route is in it), served at {@code /openapi.yaml} and,
 * converted, at {@code /openapi.json}; and Swagger UI at {@code /docs}, from the swagger-ui webjar
 * (no CDN).
 */
public final class OpenApiDocs {
  /** Class path of the OpenAPI document. */
  public static final String SPEC_RESOURCE = "/io/pgjobs/server/openapi/openapi.yaml";

  private static final String SWAGGER_UI_POM =
      "/META-INF/maven/org.webjars/swagger-ui/pom.properties";

  private final String yaml;
  private final String json;
  private final String docsPage;

  /** Loads the document and the Swagger UI page. */
  public OpenApiDocs() {
    this.yaml = resource(SPEC_RESOURCE);
    JsonNode tree = YAMLMapper.builder().build().readTree(yaml);
    this.json =
        JsonMapper.builder().build().writerWithDefaultPrettyPrinter().writeValueAsString(tree);
    this.docsPage =
        resource("/io/pgjobs/server/openapi/docs.html").replace("{{version}}", swaggerUiVersion());
  }

  /** Registers {@code /openapi.json}, {@code /openapi.yaml} and {@code /docs}. */
  public void register(Routes routes) {
    routes.get("/openapi.json", ctx -> Reply.text("application/json", json));
    routes.get("/openapi.yaml", ctx -> Reply.text("application/yaml; charset=utf-8", yaml));
    routes.get("/docs", ctx -> Reply.text("text/html; charset=utf-8", docsPage));
  }

  /** The document as JSON. */
  public String json() {
    return json;
  }

  static String swaggerUiVersion() {
    Properties p = new Properties();
    try (InputStream in = OpenApiDocs.class.getResourceAsStream(SWAGGER_UI_POM)) {
      if (in == null) {
        throw new IllegalStateException(
            "the swagger-ui webjar is not on the class path (" + SWAGGER_UI_POM + ")");
      }
      p.load(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return p.getProperty("version");
  }

  private static String resource(String path) {
    try (InputStream in = OpenApiDocs.class.getResourceAsStream(path)) {
      if (in == null) {
        throw new IllegalStateException("missing resource " + path);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
