import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (((b + (-a)) - ((a + 1.5) - (1.5 - 0.25))) - (-3.0 * (-3.0 * b)))
        acc = a
        for j in range(3):
            acc = acc + t0
        pto.store(o + i, acc)
