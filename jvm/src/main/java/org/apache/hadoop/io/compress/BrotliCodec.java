package org.apache.hadoop.io.compress;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import org.brotli.dec.BrotliInputStream;

/**
 * Reads Brotli-compressed Parquet pages (DuckDB's parquet_compression 'brotli').
 *
 * <p>Parquet looks its Brotli codec up by this class name, which Hadoop does not ship, so
 * Spark failed such files with a ClassNotFoundException. Decompression goes through the
 * pure-Java decoder of Google's Brotli project; nothing here compresses (the adapter writes
 * snappy or zstd).
 */
public class BrotliCodec implements CompressionCodec {

  @Override
  public CompressionOutputStream createOutputStream(OutputStream out) {
    throw new UnsupportedOperationException("Brotli is read only here");
  }

  @Override
  public CompressionOutputStream createOutputStream(OutputStream out, Compressor compressor) {
    throw new UnsupportedOperationException("Brotli is read only here");
  }

  @Override
  public Class<? extends Compressor> getCompressorType() {
    return null;
  }

  @Override
  public Compressor createCompressor() {
    return null;
  }

  @Override
  public CompressionInputStream createInputStream(InputStream in) throws IOException {
    return new Stream(in);
  }

  @Override
  public CompressionInputStream createInputStream(InputStream in, Decompressor decompressor)
      throws IOException {
    return new Stream(in);
  }

  @Override
  public Class<? extends Decompressor> getDecompressorType() {
    return Unused.class;
  }

  @Override
  public Decompressor createDecompressor() {
    return new Unused();
  }

  @Override
  public String getDefaultExtension() {
    return ".br";
  }

  /** One compressed page as its decompressed bytes. */
  private static final class Stream extends CompressionInputStream {
    private final BrotliInputStream brotli;

    Stream(InputStream in) throws IOException {
      super(in);
      brotli = new BrotliInputStream(in);
    }

    @Override
    public int read() throws IOException {
      return brotli.read();
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      return brotli.read(b, off, len);
    }

    @Override
    public void resetState() {
      // one stream per page: nothing carries over
    }

    @Override
    public void close() throws IOException {
      brotli.close();
    }
  }

  /** The pooled decompressor Hadoop asks for; the stream above does the work. */
  public static final class Unused implements Decompressor {
    @Override
    public void setInput(byte[] b, int off, int len) {}

    @Override
    public boolean needsInput() {
      return false;
    }

    @Override
    public void setDictionary(byte[] b, int off, int len) {}

    @Override
    public boolean needsDictionary() {
      return false;
    }

    @Override
    public boolean finished() {
      return true;
    }

    @Override
    public int decompress(byte[] b, int off, int len) {
      return 0;
    }

    @Override
    public int getRemaining() {
      return 0;
    }

    @Override
    public void reset() {}

    @Override
    public void end() {}
  }
}
