/**
 * INTERNAL. The hand-written OpenAPI document (the contract, spec first) and Swagger UI from the
 * swagger-ui webjar.
 */
package io.pgjobs.server.openapi;
