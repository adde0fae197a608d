package ducklake.jvm;

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias;
import org.apache.spark.sql.catalyst.plans.logical.View;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.util.ArrowUtils;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A small result the driver's JVM holds (its optimized plan a {@code LocalRelation}, which the
 * caller checks: no job computes it), written as one Arrow stream to a local file for Python to
 * read.
 *
 * <p>Collected through py4j the usual way, each row is pickled here and unpickled into a {@code
 * Row} there: ~40 ms for the 10,000 upserts of a feed model's MERGE, whose decision is made on
 * the driver. Columns are integers, text, booleans and floats only, whose Arrow values Python
 * reads as the same Python values.
 */
public final class HeldRows {
  /** A column of another type: collect the result as usual. */
  public static final long NOT_HERE = -1;

  /** More rows than the limit: nothing written. */
  public static final long TOO_MANY = -2;

  private HeldRows() {}

  /** Rows written to {@code path}, or {@link #NOT_HERE} / {@link #TOO_MANY}. */
  public static long write(org.apache.spark.sql.Dataset<Row> result, String path, long limit)
      throws IOException {
    // the optimized plan's own rows (the caller checked it is a LocalRelation): collected
    // through the Dataset, each would be planned, executed and converted to a Row first
    LogicalPlan plan = ((Dataset<Row>) result).queryExecution().optimizedPlan();
    if (!(plan instanceof LocalRelation local)) {
      return NOT_HERE;
    }
    int[] all = new int[result.schema().fields().length];
    for (int c = 0; c < all.length; c++) {
      all[c] = c;
    }
    return write(local, all, path, limit);
  }

  /**
   * Columns {@code columns} (positions, comma-separated) of {@code source}, whose analyzed
   * plan is a relation the driver holds (a {@code LocalRelation}, under aliases, views and
   * projections that give all its columns first, as they are), written to {@code path} without
   * optimizing a query of them:
   * Spark's optimizer takes ~15 ms for the 10,000 rows of a change-feed model's MERGE source,
   * mostly copying every row. {@link #NOT_HERE} for any other plan.
   */
  public static long writeColumns(
      org.apache.spark.sql.Dataset<Row> source, String columns, String path, long limit)
      throws IOException {
    LocalRelation local = heldRelation(((Dataset<Row>) source).queryExecution().analyzed());
    if (local == null) {
      return NOT_HERE;
    }
    int[] at = Arrays.stream(columns.split(",")).mapToInt(Integer::parseInt).toArray();
    int width = local.output().size();
    if (Arrays.stream(at).anyMatch(c -> c < 0 || c >= width)) {
      return NOT_HERE; // a column a projection adds
    }
    return write(local, at, path, limit);
  }

  /** The relation a plan reads as it is, or null. */
  private static LocalRelation heldRelation(LogicalPlan plan) {
    while (true) {
      if (plan instanceof LocalRelation local) {
        return local;
      } else if (plan instanceof SubqueryAlias alias) {
        plan = alias.child();
      } else if (plan instanceof View view) {
        plan = view.child();
      } else if (plan instanceof Project project && keepsAll(project)) {
        plan = project.child();
      } else {
        return null;
      }
    }
  }

  /** Whether a projection gives its child's columns first, as they are, in their order. */
  private static boolean keepsAll(Project project) {
    List<NamedExpression> out = CollectionConverters.asJava(project.projectList());
    List<Attribute> in = CollectionConverters.asJava(project.child().output());
    if (out.size() < in.size()) {
      return false;
    }
    for (int i = 0; i < in.size(); i++) {
      if (!(out.get(i) instanceof Attribute a) || !a.exprId().equals(in.get(i).exprId())) {
        return false;
      }
    }
    return true;
  }

  private static long write(LocalRelation local, int[] at, String path, long limit)
      throws IOException {
    StructField[] fields = local.schema().fields();
    List<Field> arrow = new ArrayList<>(at.length);
    for (int c : at) {
      ArrowType type = arrowType(fields[c].dataType());
      if (type == null) {
        return NOT_HERE;
      }
      arrow.add(new Field(fields[c].name(), FieldType.nullable(type), null));
    }
    // a copy: the relation's rows may be a linked list, read here by position
    List<InternalRow> rows = new ArrayList<>(CollectionConverters.asJava(local.data()));
    if (rows.size() > limit) {
      return TOO_MANY;
    }
    try (BufferAllocator memory =
            ArrowUtils.rootAllocator().newChildAllocator("ducklake held rows", 0, Long.MAX_VALUE);
        VectorSchemaRoot root = VectorSchemaRoot.create(new Schema(arrow), memory)) {
      root.allocateNew();
      for (int c = 0; c < at.length; c++) {
        fill(root.getVector(c), rows, at[c]);
      }
      root.setRowCount(rows.size());
      try (FileOutputStream out = new FileOutputStream(path);
          ArrowStreamWriter writer = new ArrowStreamWriter(root, null, out.getChannel())) {
        writer.start();
        writer.writeBatch();
        writer.end();
      }
    }
    return rows.size();
  }

  private static ArrowType arrowType(DataType type) {
    if (type.equals(DataTypes.LongType)) {
      return new ArrowType.Int(64, true);
    } else if (type.equals(DataTypes.IntegerType)) {
      return new ArrowType.Int(32, true);
    } else if (type.equals(DataTypes.ShortType)) {
      return new ArrowType.Int(16, true);
    } else if (type.equals(DataTypes.ByteType)) {
      return new ArrowType.Int(8, true);
    } else if (type.equals(DataTypes.BooleanType)) {
      return ArrowType.Bool.INSTANCE;
    } else if (type.equals(DataTypes.DoubleType)) {
      return new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
    } else if (type.equals(DataTypes.FloatType)) {
      return new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
    } else if (type.equals(DataTypes.StringType)) { // the binary collation only
      return ArrowType.Utf8.INSTANCE;
    }
    return null;
  }

  private static void fill(FieldVector vector, List<InternalRow> rows, int c) {
    for (int i = 0; i < rows.size(); i++) {
      InternalRow row = rows.get(i);
      if (row.isNullAt(c)) {
        vector.setNull(i);
      } else if (vector instanceof BigIntVector v) {
        v.setSafe(i, row.getLong(c));
      } else if (vector instanceof IntVector v) {
        v.setSafe(i, row.getInt(c));
      } else if (vector instanceof SmallIntVector v) {
        v.setSafe(i, row.getShort(c));
      } else if (vector instanceof TinyIntVector v) {
        v.setSafe(i, row.getByte(c));
      } else if (vector instanceof BitVector v) {
        v.setSafe(i, row.getBoolean(c) ? 1 : 0);
      } else if (vector instanceof Float8Vector v) {
        v.setSafe(i, row.getDouble(c));
      } else if (vector instanceof Float4Vector v) {
        v.setSafe(i, row.getFloat(c));
      } else if (vector instanceof VarCharVector v) {
        // as Java text: Spark's own text class is not among the classes built against
        v.setSafe(i, row.get(c, DataTypes.StringType).toString().getBytes(StandardCharsets.UTF_8));
      }
    }
    vector.setValueCount(rows.size());
  }
}
