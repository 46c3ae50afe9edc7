package io.pgjobs.server;

import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import io.pgjobs.server.ApiTestSupport.Response;
import java.util.List;
import java.util.Locale;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * Checks real responses against the OpenAPI document: the status must be documented for the operation,
 * with the response's media type, and the body must validate against its JSON Schema (OpenAPI 3.1
 * schemas are JSON Schema 2020-12).
 */
final class SpecValidator {
  private final JsonNode spec;
  private final SchemaRegistry registry =
      SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12);

  SpecValidator(JsonNode spec) {
    this.spec = spec;
  }

  /** The problems of {@code response} to {@code method specPath}; empty when it conforms. */
  List<String> problems(String method, String specPath, Response response) {
    JsonNode operation = spec.path("paths").path(specPath).path(method.toLowerCase(Locale.ROOT));
    if (operation.isMissingNode()) {
      return List.of(method + " " + specPath + " is not in the spec");
    }
    JsonNode documented =
        resolve(operation.path("responses").path(Integer.toString(response.status())));
    if (documented.isMissingNode()) {
      return List.of(method + " " + specPath + " does not document status " + response.status());
    }
    if (documented.path("content").isMissingNode() && response.body().isEmpty()) {
      return List.of(); // documented without a body (204), and none sent
    }
    String mediaType = response.contentType() == null
        ? null
        : response.contentType().split(";")[0].trim();
    JsonNode content = documented.path("content").path(mediaType);
    if (content.isMissingNode()) {
      return List.of(
          method + " " + specPath + " " + response.status() + " does not document " + mediaType);
    }
    if (!mediaType.endsWith("json")) {
      return List.of();
    }
    ObjectNode schemaDoc = ((ObjectNode) content.path("schema")).deepCopy();
    schemaDoc.set("components", spec.path("components"));
    Schema schema = registry.getSchema(schemaDoc);
    List<Error> errors = schema.validate(response.json());
    return errors.stream()
        .map(e -> method + " " + specPath + " " + response.status() + ": " + e)
        .toList();
  }

  /** The problems of a JSON request body against the operation's request schema; empty when it conforms. */
  List<String> requestProblems(String method, String specPath, JsonNode body) {
    JsonNode operation = spec.path("paths").path(specPath).path(method.toLowerCase(Locale.ROOT));
    JsonNode content = operation.path("requestBody").path("content").path("application/json");
    if (content.isMissingNode()) {
      return List.of(method + " " + specPath + " documents no JSON request body");
    }
    ObjectNode schemaDoc = ((ObjectNode) content.path("schema")).deepCopy();
    schemaDoc.set("components", spec.path("components"));
    return registry.getSchema(schemaDoc).validate(body).stream()
        .map(e -> method + " " + specPath + " request: " + e)
        .toList();
  }

  private JsonNode resolve(JsonNode node) {
    JsonNode ref = node.path("$ref");
    if (ref.isString()) {
      JsonNode target = spec;
      for (String part : ref.asString().substring(2).split("/")) {
        target = target.path(part);
      }
      return target;
    }
    return node;
  }
}
