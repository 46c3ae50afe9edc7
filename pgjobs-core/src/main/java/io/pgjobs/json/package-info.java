/**
 * JSON encoding of payloads, outputs and error entries (Jackson 3, no default typing). Exported for
 * {@link io.pgjobs.json.PayloadCodec#DEFAULT_MAPPER}, the mapper payloads are written with; the rest is
 * not meant for applications.
 */
package io.pgjobs.json;
