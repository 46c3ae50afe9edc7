/** INTERNAL (not exported by module-info). LISTEN/NOTIFY wake-ups for idle workers; polling stays the fallback. */
package io.pgjobs.notify;
