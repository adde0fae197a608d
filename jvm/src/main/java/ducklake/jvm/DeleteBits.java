package ducklake.jvm;

import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The deleted positions of each data file of a scan, as bitsets, loaded in the task that
 * first needs them and cached per executor by delete file and snapshot.
 *
 * <p>The driver builds it from a spec, one line per data file of the scan: {@code key TAB
 * delete-path TAB format TAB begin-snapshot TAB base64-key TAB inlined positions (comma
 * separated)}; empty fields for none. Files are told apart by their size, the key, which the
 * driver checked is unique among the files of the scan; for a reader, which also knows each
 * file's name, files of equal size are keyed {@code size/name}.
 */
final class DeleteBits implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final String CHANGED =
      "a Parquet file's size differs from the size the DuckLake catalog records for it: the file"
          + " was changed outside the lake";
  private static final long CACHE_WORDS = 8L << 20; // 64 MiB of bitsets per executor
  private static final Map<String, long[]> LOADED = new LinkedHashMap<>(16, 0.75f, true);
  private static long cachedWords;
  private static final Map<Map<String, String>, Configuration> CONFS = new HashMap<>();

  private final long snapshot;
  private final HashMap<String, String[]> files = new HashMap<>();
  private final HashMap<String, String> fileSystemConf = new HashMap<>();
  private transient HashMap<String, long[]> bitsBySize;
  private boolean keyed; // data files open through KeyedFileSystem (an encrypted lake)

  DeleteBits(String spec, long snapshot, Configuration conf) {
    this.snapshot = snapshot;
    for (String line : spec.split("\n")) {
      String[] fields = line.split("\t", -1);
      if (fields.length != 6) {
        throw new IllegalArgumentException("bad delete spec line: " + line);
      }
      files.put(fields[0], fields);
    }
    // a keyed read (an encrypted lake) opens data files through KeyedFileSystem; delete
    // files are decrypted here, so they are read through the file system it wraps
    String delegate = conf.get("ducklake.keyed.delegate");
    for (Map.Entry<String, String> e : conf.getPropsWithPrefix("fs.").entrySet()) {
      String value = e.getValue();
      if (KeyedFileSystem.class.getName().equals(value)) {
        keyed = true;
        if (delegate == null) {
          continue;
        }
        value = delegate;
      }
      fileSystemConf.put("fs." + e.getKey(), value);
    }
  }

  /** Bit p set: position p of the file of this size is deleted (bits past the end: kept). */
  long[] of(long size) {
    return of(size, null);
  }

  /** As {@link #of(long)}, for the file of this size and name (files of equal size). */
  long[] of(long size, String name) {
    if (bitsBySize == null) {
      bitsBySize = new HashMap<>();
    }
    String key = Long.toString(size);
    String[] spec = files.get(key);
    if (spec == null && name != null) {
      key = key + "/" + name;
      spec = files.get(key);
    }
    long[] bits = bitsBySize.get(key);
    if (bits == null) {
      if (spec == null) {
        throw new IllegalStateException(CHANGED);
      }
      try {
        bits = withInlined(fileBits(spec), spec[5]);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      bitsBySize.put(key, bits);
    }
    return bits;
  }

  static boolean deleted(long[] bits, long position) {
    int word = (int) (position >>> 6);
    return word < bits.length && (bits[word] & (1L << position)) != 0;
  }

  /**
   * Fills {@code keep} with the offsets {@code i < rows} whose position {@code start + i} is
   * not deleted, and returns how many: a run of consecutive positions tested a word at a time.
   */
  static int keptOfRun(long[] bits, long start, int rows, int[] keep) {
    int kept = 0;
    int i = 0;
    while (i < rows) {
      long at = start + i;
      int word = (int) (at >>> 6);
      if (word >= bits.length) {
        while (i < rows) {
          keep[kept++] = i++;
        }
        break;
      }
      int bit = (int) (at & 63);
      int span = Math.min(64 - bit, rows - i);
      long deleted = bits[word] >>> bit; // bit j: position at + j
      for (int j = 0; j < span; j++) {
        if ((deleted & (1L << j)) == 0) {
          keep[kept++] = i + j;
        }
      }
      i += span;
    }
    return kept;
  }

  private long[] fileBits(String[] spec) throws IOException {
    String path = spec[1];
    if (path.isEmpty()) {
      return new long[0];
    }
    String cacheKey = path + "@" + snapshot;
    synchronized (LOADED) {
      long[] cached = LOADED.get(cacheKey);
      if (cached != null) {
        return cached;
      }
    }
    byte[] file = read(path);
    boolean vector = "puffin".equalsIgnoreCase(spec[2]);
    if (!spec[4].isEmpty() && !vector) { // deletion vectors stay plaintext, keyed or not
      file = EncryptedParquet.decrypt(file, Base64.getDecoder().decode(spec[4]), path);
    }
    long begin = Long.parseLong(spec[3]);
    long[] bits =
        vector
            ? DeletedPositions.ofVector(file, begin, snapshot, path)
            : DeletedPositions.ofParquet(file, begin, snapshot, path);
    remember(cacheKey, bits);
    return bits;
  }

  private static void remember(String key, long[] bits) {
    synchronized (LOADED) {
      if (LOADED.put(key, bits) == null) {
        cachedWords += bits.length;
      }
      var oldest = LOADED.entrySet().iterator();
      while (cachedWords > CACHE_WORDS && oldest.hasNext()) {
        var entry = oldest.next();
        if (entry.getValue() != bits) {
          cachedWords -= entry.getValue().length;
          oldest.remove();
        }
      }
    }
  }

  private static long[] withInlined(long[] fileBits, String inlined) {
    if (inlined.isEmpty()) {
      return fileBits;
    }
    long[] bits = fileBits;
    boolean copied = false;
    for (String text : inlined.split(",")) {
      long p = Long.parseLong(text);
      int word = (int) (p >>> 6);
      if (!copied || word >= bits.length) {
        long[] grown = new long[Math.max(word + 1, bits.length)];
        System.arraycopy(bits, 0, grown, 0, bits.length);
        bits = grown;
        copied = true;
      }
      bits[word] |= 1L << p;
    }
    return bits;
  }

  /** Whether data files are opened through KeyedFileSystem (an encrypted lake). */
  boolean keyed() {
    return keyed;
  }

  /** The scan's file system settings, for reading files beside the scan's own reader. */
  Configuration fileSystemConf() {
    synchronized (CONFS) { // a Configuration parses its XML defaults: once per settings
      Configuration conf = CONFS.get(fileSystemConf);
      if (conf == null) {
        conf = new Configuration();
        fileSystemConf.forEach(conf::set);
        if (CONFS.size() > 16) {
          CONFS.clear();
        }
        CONFS.put(fileSystemConf, conf);
      }
      return conf;
    }
  }

  private byte[] read(String path) throws IOException {
    if (!path.contains(":")) { // a local path: no Hadoop file system needed
      return java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(path));
    }
    Path p = new Path(path);
    FileSystem fs = p.getFileSystem(fileSystemConf());
    long length = fs.getFileStatus(p).getLen();
    if (length > Integer.MAX_VALUE) {
      throw new IOException("delete file " + path + " is over 2 GiB");
    }
    byte[] data = new byte[(int) length];
    try (FSDataInputStream in = fs.open(p)) {
      in.readFully(0, data);
    }
    return data;
  }
}
