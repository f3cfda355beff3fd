import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (pto.select(((b & 100) ^ (a * a)) > a, ((b & 100) ^ (a * a)), a) ^ pto.select(((b & b) - a) > (b * 100), ((b & b) - a), (b * 100)))
        acc2 = t0
        for j in range(i % 4, 4):
            acc2 = acc2 + t0
        pto.store(o + i, acc2)
