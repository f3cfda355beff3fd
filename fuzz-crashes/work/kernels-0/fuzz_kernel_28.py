import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = b
        t1 = pto.select((((b ^ a) - b) + (a + (100 ^ -7))) < (((-b) | a) | ((1 ^ 100) - a)), (((b ^ a) - b) + (a + (100 ^ -7))), (((-b) | a) | ((1 ^ 100) - a)))
        t2 = b
        if t0 >= t0:
            t2 = ((a | a) ^ ((3 | (100 & a)) - (-(t1 | a))))
        t3 = pto.select((t2 - (b | (a * 3))) > ((-7 * (t1 - a)) | 1), (t2 - (b | (a * 3))), ((-7 * (t1 - a)) | 1))
        acc = a
        for j in range(3):
            acc = acc + t3
        while a < b:
            pass
        else:
            pass
        pto.store(o + i, acc)
