; hpvm's own test program, written as HPVM's GenHPVM writes HPVM IR (LLVM 9 text) for a
; saxpy-and-scale step a host runs in a hot loop: typed pointers (float*, i8*), bare in/out
; attributes, a packed %struct.out.* return and numbered empty ones (%emptyStruct,
; %emptyStruct.0), node functions passed through bitcast constant expressions, the hint
; lists of the release naming every node function (all three under the CPU hint), a main
; that fills the root's packed argument struct (%struct.RootIn: each pointer followed by its
; size in bytes, then the scalars) and launches the graph in a loop.
;
; Three levels. SaxpyRoot creates one SaxpyWrapper, which replicates the leaf saxpy_scale
; 1-D over y's element count (bytes_y / 4, lshr as clang -O2 writes a size_t division).
; Each instance i with i < n (the i32 count, compared as C compares an int instance id:
; truncated, then sign-extended for the index) computes
;   y[i] = a * x[i] + y[i] * s
; in float (two fmul, one fadd: clang 9 contracts nothing here), a and s float scalars.
; Straight-line code, no loop. The leaf returns y's byte size as HPVM's leaves do, which the
; wrapper leaves unbound: the root has no outputs.
; ModuleID = 'saxpyscale.c'
source_filename = "saxpyscale.c"
target datalayout = "e-m:e-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

%struct.RootIn = type <{ float*, i64, float*, i64, float, float, i32 }>
%struct.out.saxpy_scale = type <{ i64 }>
%emptyStruct = type {}
%emptyStruct.0 = type {}

; Function Attrs: nounwind uwtable
define dso_local i32 @main() local_unnamed_addr #0 {
entry:
  %RootArgs = alloca %struct.RootIn, align 1
  %0 = bitcast %struct.RootIn* %RootArgs to i8*
  call void @llvm.lifetime.start.p0i8(i64 44, i8* nonnull %0) #4
  %call = tail call noalias i8* @malloc(i64 1024) #4
  %1 = bitcast i8* %call to float*
  %call1 = tail call noalias i8* @malloc(i64 1024) #4
  %2 = bitcast i8* %call1 to float*
  %x = getelementptr inbounds %struct.RootIn, %struct.RootIn* %RootArgs, i64 0, i32 0
  store float* %1, float** %x, align 1, !tbaa !10
  %bytes_x = getelementptr inbounds %struct.RootIn, %struct.RootIn* %RootArgs, i64 0, i32 1
  store i64 1024, i64* %bytes_x, align 1, !tbaa !14
  %y = getelementptr inbounds %struct.RootIn, %struct.RootIn* %RootArgs, i64 0, i32 2
  store float* %2, float** %y, align 1, !tbaa !15
  %bytes_y = getelementptr inbounds %struct.RootIn, %struct.RootIn* %RootArgs, i64 0, i32 3
  store i64 1024, i64* %bytes_y, align 1, !tbaa !16
  %a = getelementptr inbounds %struct.RootIn, %struct.RootIn* %RootArgs, i64 0, i32 4
  store float 2.000000e+00, float* %a, align 1, !tbaa !17
  %s = getelementptr inbounds %struct.RootIn, %struct.RootIn* %RootArgs, i64 0, i32 5
  store float 5.000000e-01, float* %s, align 1, !tbaa !18
  %n = getelementptr inbounds %struct.RootIn, %struct.RootIn* %RootArgs, i64 0, i32 6
  store i32 200, i32* %n, align 1, !tbaa !19
  call void @llvm.hpvm.init()
  call void @llvm_hpvm_track_mem(i8* %call, i64 1024) #4
  call void @llvm_hpvm_track_mem(i8* %call1, i64 1024) #4
  br label %for.body

for.body:                                         ; preds = %for.body, %entry
  %step.0 = phi i32 [ 0, %entry ], [ %inc, %for.body ]
  %graphID = call i8* @llvm.hpvm.launch(i8* bitcast (%emptyStruct.0 (float*, i64, float*, i64, float, float, i32)* @SaxpyRoot_cloned to i8*), i8* nonnull %0, i1 false)
  call void @llvm.hpvm.wait(i8* %graphID)
  %inc = add nuw nsw i32 %step.0, 1
  %exitcond = icmp eq i32 %inc, 100
  br i1 %exitcond, label %for.end, label %for.body

for.end:                                          ; preds = %for.body
  call void @llvm_hpvm_request_mem(i8* %call1, i64 1024) #4
  call void @llvm_hpvm_untrack_mem(i8* %call) #4
  call void @llvm_hpvm_untrack_mem(i8* %call1) #4
  call void @llvm.hpvm.cleanup()
  call void @llvm.lifetime.end.p0i8(i64 44, i8* nonnull %0) #4
  ret i32 0
}

; Function Attrs: argmemonly nounwind
declare void @llvm.lifetime.start.p0i8(i64 immarg, i8* nocapture) #1

; Function Attrs: nofree nounwind
declare dso_local noalias i8* @malloc(i64) local_unnamed_addr #2

declare dso_local void @llvm_hpvm_track_mem(i8*, i64) local_unnamed_addr #3

declare dso_local void @llvm_hpvm_request_mem(i8*, i64) local_unnamed_addr #3

declare dso_local void @llvm_hpvm_untrack_mem(i8*) local_unnamed_addr #3

; Function Attrs: argmemonly nounwind
declare void @llvm.lifetime.end.p0i8(i64 immarg, i8* nocapture) #1

; Function Attrs: nounwind uwtable
define dso_local %struct.out.saxpy_scale @saxpy_scale_cloned(float* in %x, i64 %bytes_x, float* in out %y, i64 %bytes_y, float %a, float %s, i32 %n) #0 {
entry:
  %node = call i8* @llvm.hpvm.getNode()
  %call = call i64 @llvm.hpvm.getNodeInstanceID.x(i8* %node)
  %conv = trunc i64 %call to i32
  %cmp = icmp slt i32 %conv, %n
  br i1 %cmp, label %if.then, label %if.end

if.then:                                          ; preds = %entry
  %sext = shl i64 %call, 32
  %idxprom = ashr exact i64 %sext, 32
  %arrayidx = getelementptr inbounds float, float* %x, i64 %idxprom
  %0 = load float, float* %arrayidx, align 4, !tbaa !5
  %mul = fmul float %0, %a
  %arrayidx2 = getelementptr inbounds float, float* %y, i64 %idxprom
  %1 = load float, float* %arrayidx2, align 4, !tbaa !5
  %mul3 = fmul float %1, %s
  %add = fadd float %mul, %mul3
  store float %add, float* %arrayidx2, align 4, !tbaa !5
  br label %if.end

if.end:                                           ; preds = %if.then, %entry
  %returnStruct = insertvalue %struct.out.saxpy_scale undef, i64 %bytes_y, 0
  ret %struct.out.saxpy_scale %returnStruct
}

; Function Attrs: nounwind readnone
declare i8* @llvm.hpvm.getNode() #5

; Function Attrs: nounwind readnone
declare i64 @llvm.hpvm.getNodeInstanceID.x(i8*) #5

; Function Attrs: nounwind uwtable
define dso_local %emptyStruct @SaxpyWrapper_cloned(float* in %x, i64 %bytes_x, float* in out %y, i64 %bytes_y, float %a, float %s, i32 %n) #0 {
entry:
  %div = lshr i64 %bytes_y, 2
  %saxpy_scale_cloned.node = call i8* @llvm.hpvm.createNode1D(i8* bitcast (%struct.out.saxpy_scale (float*, i64, float*, i64, float, float, i32)* @saxpy_scale_cloned to i8*), i64 %div)
  call void @llvm.hpvm.bind.input(i8* %saxpy_scale_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(i8* %saxpy_scale_cloned.node, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %saxpy_scale_cloned.node, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %saxpy_scale_cloned.node, i32 3, i32 3, i1 false)
  call void @llvm.hpvm.bind.input(i8* %saxpy_scale_cloned.node, i32 4, i32 4, i1 false)
  call void @llvm.hpvm.bind.input(i8* %saxpy_scale_cloned.node, i32 5, i32 5, i1 false)
  call void @llvm.hpvm.bind.input(i8* %saxpy_scale_cloned.node, i32 6, i32 6, i1 false)
  ret %emptyStruct undef
}

; Function Attrs: nounwind
declare i8* @llvm.hpvm.createNode1D(i8*, i64) #4

; Function Attrs: nounwind
declare void @llvm.hpvm.bind.input(i8*, i32, i32, i1) #4

; Function Attrs: nounwind uwtable
define dso_local %emptyStruct.0 @SaxpyRoot_cloned(float* in %x, i64 %bytes_x, float* in out %y, i64 %bytes_y, float %a, float %s, i32 %n) #0 {
entry:
  %SaxpyWrapper_cloned.node = call i8* @llvm.hpvm.createNode(i8* bitcast (%emptyStruct (float*, i64, float*, i64, float, float, i32)* @SaxpyWrapper_cloned to i8*))
  call void @llvm.hpvm.bind.input(i8* %SaxpyWrapper_cloned.node, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(i8* %SaxpyWrapper_cloned.node, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(i8* %SaxpyWrapper_cloned.node, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(i8* %SaxpyWrapper_cloned.node, i32 3, i32 3, i1 false)
  call void @llvm.hpvm.bind.input(i8* %SaxpyWrapper_cloned.node, i32 4, i32 4, i1 false)
  call void @llvm.hpvm.bind.input(i8* %SaxpyWrapper_cloned.node, i32 5, i32 5, i1 false)
  call void @llvm.hpvm.bind.input(i8* %SaxpyWrapper_cloned.node, i32 6, i32 6, i1 false)
  ret %emptyStruct.0 undef
}

; Function Attrs: nounwind
declare i8* @llvm.hpvm.createNode(i8*) #4

; Function Attrs: nounwind
declare void @llvm.hpvm.init() #4

; Function Attrs: nounwind
declare i8* @llvm.hpvm.launch(i8*, i8*, i1) #4

; Function Attrs: nounwind
declare void @llvm.hpvm.wait(i8*) #4

; Function Attrs: nounwind
declare void @llvm.hpvm.cleanup() #4

attributes #0 = { nounwind uwtable "correctly-rounded-divide-sqrt-fp-math"="false" "disable-tail-calls"="false" "less-precise-fpmad"="false" "min-legal-vector-width"="0" "no-frame-pointer-elim"="false" "no-infs-fp-math"="false" "no-jump-tables"="false" "no-nans-fp-math"="false" "no-signed-zeros-fp-math"="false" "no-trapping-math"="false" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "unsafe-fp-math"="false" "use-soft-float"="false" }
attributes #1 = { argmemonly nounwind }
attributes #2 = { nofree nounwind "correctly-rounded-divide-sqrt-fp-math"="false" "disable-tail-calls"="false" "less-precise-fpmad"="false" "no-frame-pointer-elim"="false" "no-infs-fp-math"="false" "no-nans-fp-math"="false" "no-signed-zeros-fp-math"="false" "no-trapping-math"="false" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "unsafe-fp-math"="false" "use-soft-float"="false" }
attributes #3 = { "correctly-rounded-divide-sqrt-fp-math"="false" "disable-tail-calls"="false" "less-precise-fpmad"="false" "no-frame-pointer-elim"="false" "no-infs-fp-math"="false" "no-nans-fp-math"="false" "no-signed-zeros-fp-math"="false" "no-trapping-math"="false" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "unsafe-fp-math"="false" "use-soft-float"="false" }
attributes #4 = { nounwind }
attributes #5 = { nounwind readnone }

!llvm.module.flags = !{!0}
!llvm.ident = !{!1}
!hpvm_hint_cpu = !{!2, !3, !4}
!hpvm_hint_gpu = !{}
!hpvm_hint_spir = !{}
!hpvm_hint_cudnn = !{}
!hpvm_hint_promise = !{}
!hpvm_hint_cpu_gpu = !{}
!hpvm_hint_cpu_spir = !{}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{!"clang version 9.0.0"}
!2 = !{%struct.out.saxpy_scale (float*, i64, float*, i64, float, float, i32)* @saxpy_scale_cloned}
!3 = !{%emptyStruct (float*, i64, float*, i64, float, float, i32)* @SaxpyWrapper_cloned}
!4 = !{%emptyStruct.0 (float*, i64, float*, i64, float, float, i32)* @SaxpyRoot_cloned}
!5 = !{!6, !6, i64 0}
!6 = !{!"float", !7, i64 0}
!7 = !{!"omnipotent char", !8, i64 0}
!8 = !{!"Simple C/C++ TBAA"}
!9 = !{!"int", !7, i64 0}
!10 = !{!11, !12, i64 0}
!11 = !{!"", !12, i64 0, !13, i64 8, !12, i64 16, !13, i64 24, !6, i64 32, !6, i64 36, !9, i64 40}
!12 = !{!"any pointer", !7, i64 0}
!13 = !{!"long", !7, i64 0}
!14 = !{!11, !13, i64 8}
!15 = !{!11, !12, i64 16}
!16 = !{!11, !13, i64 24}
!17 = !{!11, !6, i64 32}
!18 = !{!11, !6, i64 36}
!19 = !{!11, !9, i64 40}
