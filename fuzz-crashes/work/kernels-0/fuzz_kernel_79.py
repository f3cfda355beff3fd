import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (pto.select((pto.select(b != b, b, b) + (a & 1)) < ((b ^ b) & (3 ^ 100)), (pto.select(b != b, b, b) + (a & 1)), ((b ^ b) & (3 ^ 100))) + ((3 & (-100)) | -7))
        t1 = pto.select(((a * (t0 | t0)) & ((b - t0) ^ (-7 & 1))) >= pto.select(pto.select(pto.select(100 < b, 100, b) != (t0 + b), pto.select(100 < b, 100, b), (t0 + b)) > pto.select((b * 1) <= (-t0), (b * 1), (-t0)), pto.select(pto.select(100 < b, 100, b) != (t0 + b), pto.select(100 < b, 100, b), (t0 + b)), pto.select((b * 1) <= (-t0), (b * 1), (-t0))), ((a * (t0 | t0)) & ((b - t0) ^ (-7 & 1))), pto.select(pto.select(pto.select(100 < b, 100, b) != (t0 + b), pto.select(100 < b, 100, b), (t0 + b)) > pto.select((b * 1) <= (-t0), (b * 1), (-t0)), pto.select(pto.select(100 < b, 100, b) != (t0 + b), pto.select(100 < b, 100, b), (t0 + b)), pto.select((b * 1) <= (-t0), (b * 1), (-t0))))
        t2 = ((3 | -7) ^ ((a * 3) ^ a))
        acc = a
        for j in range(3):
            acc = acc + t2
        pto.store(o + i, acc)
