package ducklake.jvm;

import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.concurrent.CompletableFuture;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FilterFileSystem;
import org.apache.hadoop.fs.FutureDataInputStreamBuilder;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PositionedReadable;
import org.apache.hadoop.fs.Seekable;
import org.apache.hadoop.fs.impl.OpenFileParameters;
import org.apache.hadoop.util.ReflectionUtils;

/**
 * The file system a scan of an encrypted lake reads through: files the scan was given a key
 * for open as their plaintext Parquet (see {@link EncryptedParquet}); every other call goes
 * to the scheme's own file system.
 *
 * <p>A scan sets, as options of that one read (Spark hands them to the Hadoop configuration
 * of its tasks): {@code fs.<scheme>.impl} = this class with {@code
 * fs.<scheme>.impl.disable.cache} = true, {@code ducklake.keyed.delegate} = the scheme's own
 * file system class, and {@code ducklake.secret.<id>} = the file's key in base64 for each
 * encrypted file, where id is the SHA-256 (hex) of the file's URI authority and path (see
 * {@link #idOf}). "secret" in the name makes Spark redact the values wherever it shows
 * configuration.
 */
public class KeyedFileSystem extends FilterFileSystem {
  public static final String DELEGATE = "ducklake.keyed.delegate";
  public static final String KEY_PREFIX = "ducklake.secret.";

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    Class<?> delegate = conf.getClass(DELEGATE, null);
    if (delegate == null || KeyedFileSystem.class.isAssignableFrom(delegate)) {
      throw new IOException(DELEGATE + " must name the file system " + name + " is read with");
    }
    this.fs = (FileSystem) ReflectionUtils.newInstance(delegate, conf);
    // newInstance sets the configuration, so FilterFileSystem would skip this, and S3A
    // has no URI until it is initialized
    this.fs.initialize(name, conf);
    super.initialize(name, conf);
  }

  @Override
  public FSDataInputStream open(Path path, int bufferSize) throws IOException {
    byte[] key = keyOf(path);
    if (key == null) {
      return fs.open(path, bufferSize);
    }
    return plaintext(path, key);
  }

  /** Parquet opens files with this builder; FilterFileSystem's would bypass this class. */
  @Override
  public FutureDataInputStreamBuilder openFile(Path path) throws IOException {
    if (keyOf(path) == null) {
      return fs.openFile(path);
    }
    return createDataInputStreamBuilder(this, path);
  }

  @Override
  protected CompletableFuture<FSDataInputStream> openFileWithOptions(
      Path path, OpenFileParameters parameters) throws IOException {
    byte[] key = keyOf(path);
    if (key == null) {
      return fs.openFile(path).build();
    }
    return CompletableFuture.completedFuture(plaintext(path, key));
  }

  private FSDataInputStream plaintext(Path path, byte[] key) throws IOException {
    long length = fs.getFileStatus(path).getLen();
    if (length > Integer.MAX_VALUE - 16) {
      throw new IOException(path + ": encrypted files over 2 GiB are not read here");
    }
    byte[] file = new byte[(int) length];
    try (FSDataInputStream in = fs.open(path)) {
      in.readFully(0, file);
    }
    return new FSDataInputStream(new Bytes(EncryptedParquet.decrypt(file, key, path.toString())));
  }

  private byte[] keyOf(Path path) {
    String encoded = getConf().get(KEY_PREFIX + idOf(path.toUri()));
    return encoded == null ? null : Base64.getDecoder().decode(encoded.trim());
  }

  /** SHA-256 hex of authority (empty for local files) and decoded path: what Python hashes. */
  public static String idOf(URI uri) {
    String authority = uri.getAuthority() == null ? "" : uri.getAuthority();
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      byte[] digest = sha.digest((authority + uri.getPath()).getBytes(StandardCharsets.UTF_8));
      StringBuilder hex = new StringBuilder(64);
      for (byte b : digest) {
        hex.append(String.format("%02x", b));
      }
      return hex.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A whole file in memory, seekable and readable at positions, as Hadoop streams are. */
  static final class Bytes extends ByteArrayInputStream implements Seekable, PositionedReadable {
    Bytes(byte[] data) {
      super(data);
    }

    @Override
    public synchronized void seek(long position) throws IOException {
      if (position < 0 || position > count) {
        throw new EOFException("seek to " + position + " outside 0.." + count);
      }
      pos = (int) position;
    }

    @Override
    public synchronized long getPos() {
      return pos;
    }

    @Override
    public boolean seekToNewSource(long target) {
      return false;
    }

    @Override
    public int read(long position, byte[] buffer, int offset, int length) {
      if (position >= count) {
        return -1;
      }
      int n = (int) Math.min(length, count - position);
      System.arraycopy(buf, (int) position, buffer, offset, n);
      return n;
    }

    @Override
    public void readFully(long position, byte[] buffer, int offset, int length)
        throws IOException {
      if (position < 0 || position + length > count) {
        throw new EOFException("read of " + length + " bytes at " + position + " past " + count);
      }
      System.arraycopy(buf, (int) position, buffer, offset, length);
    }

    @Override
    public void readFully(long position, byte[] buffer) throws IOException {
      readFully(position, buffer, 0, buffer.length);
    }
  }
}
