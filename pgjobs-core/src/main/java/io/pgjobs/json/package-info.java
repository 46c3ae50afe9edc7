/** INTERNAL. JSON encoding of payloads, outputs and error entries (Jackson 3, no default typing). */
package io.pgjobs.json;
