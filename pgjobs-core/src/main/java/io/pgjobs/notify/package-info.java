/** INTERNAL. LISTEN/NOTIFY wake-ups for idle workers; polling stays the fallback. */
package io.pgjobs.notify;
