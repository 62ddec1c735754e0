; hpvm's own test program, written as HPVM's GenHPVM writes HPVM IR (LLVM 9 text) for a
; CUDA-style kernel: typed pointers, bare in/out attributes, a packed empty %struct.out
; return, the node function passed to createNode1D through a bitcast constant expression,
; hints as named metadata, a main that launches the root with llvm.hpvm.launch.
;
; y[x] = sum_k A[k*n + x] * v[k] (A^T v, A stored row-major m x n) for each instance x of a
; 1-D leaf launched over a grid rounded up past n: the whole body sits under `if (x < n)`,
; and the k loop is the same for every instance (m an argument). On cpu the leaf runs
; jammed (llvm_native/wijam.py): 8 neighbouring x per call, the guard probed first.
; ModuleID = 'matvec.c'
source_filename = "matvec.c"
target datalayout = "e-m:e-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%struct.Root = type { float*, i64, float*, i64, float*, i64, i64, i64, i64, %struct.out.MatvecRoot }
%struct.out.matvecT = type <{}>
%struct.out.MatvecRoot = type <{}>

; Function Attrs: nounwind uwtable
define dso_local %struct.out.matvecT @matvecT_cloned(float* in %A, i64 %bytes_A, float* in %v, i64 %bytes_v, float* out %y, i64 %bytes_y, i64 %n, i64 %m) #0 {
entry:
  %node = call i8* @llvm.hpvm.getNode()
  %x = call i64 @llvm.hpvm.getNodeInstanceID.x(i8* %node)
  %inside = icmp slt i64 %x, %n
  br i1 %inside, label %for.cond.preheader, label %if.end

for.cond.preheader:                               ; preds = %entry
  %cmp.k = icmp sgt i64 %m, 0
  br i1 %cmp.k, label %for.body, label %for.end

for.body:                                         ; preds = %for.cond.preheader, %for.body
  %k = phi i64 [ %k.next, %for.body ], [ 0, %for.cond.preheader ]
  %acc = phi float [ %acc.next, %for.body ], [ 0.000000e+00, %for.cond.preheader ]
  %row = mul nsw i64 %k, %n
  %idx = add nsw i64 %row, %x
  %pa = getelementptr inbounds float, float* %A, i64 %idx
  %a = load float, float* %pa, align 4, !tbaa !5
  %pv = getelementptr inbounds float, float* %v, i64 %k
  %vk = load float, float* %pv, align 4, !tbaa !5
  %mul = fmul float %a, %vk
  %acc.next = fadd float %acc, %mul
  %k.next = add nuw nsw i64 %k, 1
  %done = icmp eq i64 %k.next, %m
  br i1 %done, label %for.end, label %for.body

for.end:                                          ; preds = %for.body, %for.cond.preheader
  %sum = phi float [ 0.000000e+00, %for.cond.preheader ], [ %acc.next, %for.body ]
  %py = getelementptr inbounds float, float* %y, i64 %x
  store float %sum, float* %py, align 4, !tbaa !5
  br label %if.end

if.end:                                           ; preds = %for.end, %entry
  ret %struct.out.matvecT undef
}

; Function Attrs: nounwind uwtable
define dso_local %struct.out.MatvecRoot @MatvecRoot_cloned(float* in %A, i64 %bytes_A, float* in %v, i64 %bytes_v, float* out %y, i64 %bytes_y, i64 %n, i64 %m, i64 %grid) #0 {
entry:
  %matvecT_cloned.node = call i8* @llvm.hpvm.createNode1D(i8* bitcast (%struct.out.matvecT (float*, i64, float*, i64, float*, i64, i64, i64)* @matvecT_cloned to i8*), i64 %grid)
  call void @llvm.hpvm.bind.input(i8* %matvecT_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(i8* %matvecT_cloned.node, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %matvecT_cloned.node, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %matvecT_cloned.node, i32 3, i32 3, i1 false)
  call void @llvm.hpvm.bind.input(i8* %matvecT_cloned.node, i32 4, i32 4, i1 false)
  call void @llvm.hpvm.bind.input(i8* %matvecT_cloned.node, i32 5, i32 5, i1 false)
  call void @llvm.hpvm.bind.input(i8* %matvecT_cloned.node, i32 6, i32 6, i1 false)
  call void @llvm.hpvm.bind.input(i8* %matvecT_cloned.node, i32 7, i32 7, i1 false)
  ret %struct.out.MatvecRoot undef
}

; Function Attrs: nounwind uwtable
define dso_local i32 @main() local_unnamed_addr #1 {
entry:
  %RootArgs = alloca %struct.Root, align 8
  %0 = bitcast %struct.Root* %RootArgs to i8*
  call void @llvm.hpvm.init()
  %graphID = call i8* @llvm.hpvm.launch(i8* bitcast (%struct.out.MatvecRoot (float*, i64, float*, i64, float*, i64, i64, i64, i64)* @MatvecRoot_cloned to i8*), i8* nonnull %0, i1 false)
  call void @llvm.hpvm.wait(i8* %graphID)
  call void @llvm.hpvm.cleanup()
  ret i32 0
}

; Function Attrs: nounwind
declare i8* @llvm.hpvm.getNode() #2

; Function Attrs: nounwind
declare i64 @llvm.hpvm.getNodeInstanceID.x(i8*) #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.createNode1D(i8*, i64) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.bind.input(i8*, i32, i32, i1) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.init() #2

; Function Attrs: nounwind
declare i8* @llvm.hpvm.launch(i8*, i8*, i1) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.wait(i8*) #2

; Function Attrs: nounwind
declare void @llvm.hpvm.cleanup() #2

attributes #0 = { nounwind uwtable "correctly-rounded-divide-sqrt-fp-math"="false" "disable-tail-calls"="false" "less-precise-fpmad"="false" "min-legal-vector-width"="0" "no-frame-pointer-elim"="false" "no-infs-fp-math"="false" "no-jump-tables"="false" "no-nans-fp-math"="false" "no-signed-zeros-fp-math"="false" "no-trapping-math"="false" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "unsafe-fp-math"="false" "use-soft-float"="false" }
attributes #1 = { nounwind uwtable "no-frame-pointer-elim"="false" "target-cpu"="x86-64" }
attributes #2 = { nounwind }

!llvm.module.flags = !{!0}
!llvm.ident = !{!1}
!hpvm_hint_cpu = !{!2, !3}
!hpvm_hint_gpu = !{}
!hpvm_hint_cpu_gpu = !{}
!hpvm_hint_cudnn = !{}
!hpvm_hint_promise = !{}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{!"clang version 9.0.0"}
!2 = !{%struct.out.matvecT (float*, i64, float*, i64, float*, i64, i64, i64)* @matvecT_cloned}
!3 = !{%struct.out.MatvecRoot (float*, i64, float*, i64, float*, i64, i64, i64, i64)* @MatvecRoot_cloned}
!4 = !{!"Simple C/C++ TBAA"}
!5 = !{!6, !6, i64 0}
!6 = !{!"float", !7, i64 0}
!7 = !{!"omnipotent char", !4, i64 0}
